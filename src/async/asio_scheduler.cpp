#include "swp/async/asio_scheduler.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

namespace swp {

namespace {

// Where the calling thread stands with the scheduler's executor: the io_context it is
// running (nullptr: none of the executor's), and whether it is inside the executor's strand.
struct Here {
  boost::asio::io_context* io = nullptr;
  bool in_strand = false;
};

// io_context executors of every property combination (blocking.never, relationship.
// continuation, outstanding_work.tracked: the Bits 0-7 of basic_executor_type), plain or
// wrapped in a strand. True when `executor` holds an `Ex`; `here` then says where we stand.
template <class Ex>
bool holds(const boost::asio::any_io_executor& executor, Here& here) {
  if (const auto* ex = executor.target<Ex>()) {
    if (ex->running_in_this_thread()) here.io = &ex->context();
    return true;
  }
  if (const auto* strand = executor.target<boost::asio::strand<Ex>>()) {
    const Ex inner = strand->get_inner_executor();
    if (inner.running_in_this_thread()) {
      here.io = &inner.context();
      here.in_strand = strand->running_in_this_thread();
    }
    return true;
  }
  return false;
}

template <std::uintptr_t... Bits>
Here where_from(const boost::asio::any_io_executor& executor,
                std::integer_sequence<std::uintptr_t, Bits...>) {
  Here here;
  (void)(holds<boost::asio::io_context::basic_executor_type<std::allocator<void>, Bits>>(
             executor, here) ||
         ...);
  return here;
}

// Only on waiting paths (a driver about to wait), never per task: up to 16 type checks.
Here where(const boost::asio::any_io_executor& executor) {
  return where_from(executor, std::make_integer_sequence<std::uintptr_t, 8>());
}

constexpr auto slice = std::chrono::milliseconds(1);  // re-check done() this often when nested

// A wait on a thread of a stopped io_context: nothing runs the context's handlers on this
// thread any more (the lanes' steps among them), so waiting would only spin to the deadline.
[[noreturn]] void throw_stopped() {
  throw std::logic_error(
      "swp::AsioScheduler::drive_until: the io_context this thread runs was stopped while the "
      "wait was unfinished; its handlers (the lanes' steps) cannot run here any more. Drain "
      "the pipelines on an io_context before stopping it");
}

}  // namespace

struct AsioScheduler::Gate {
  std::atomic<bool> open{true};
  std::atomic<int> running{0};

  // A handler about to run a runnable: false when the scheduler is gone (or going), and then
  // it must not touch the runnable. seq_cst with close(): either the closing thread sees this
  // increment and waits for leave(), or this sees `open` false (store-buffering).
  bool enter() noexcept {
    running.fetch_add(1, std::memory_order_seq_cst);
    if (open.load(std::memory_order_seq_cst)) return true;
    running.fetch_sub(1, std::memory_order_release);
    return false;
  }
  void leave() noexcept { running.fetch_sub(1, std::memory_order_release); }

  void close() noexcept {
    open.store(false, std::memory_order_seq_cst);
    // acquire: what the runnables did happens before the scheduler and its runtime go.
    while (running.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
};

AsioScheduler::AsioScheduler(boost::asio::any_io_executor executor)
    : gate_(std::make_shared<Gate>()), executor_(std::move(executor)) {}

AsioScheduler::~AsioScheduler() { gate_->close(); }

bool AsioScheduler::must_not_block_here() const noexcept { return where(executor_).io != nullptr; }

void AsioScheduler::post(Runnable& r) noexcept {
  // Allocation failure here cannot be reported to anyone (the contract is noexcept): it
  // terminates, as a failed lane hand-off would otherwise lose the task silently.
  boost::asio::post(executor_, [&r, gate = gate_] {
    if (!gate->enter()) return;  // the scheduler went, and with it the runnable's owner
    r.run();
    gate->leave();
  });
}

bool AsioScheduler::drive_until(const std::function<bool()>& done, Clock::time_point deadline) {
  if (done()) return true;
  if (const Here here = where(executor_); here.io != nullptr) {
    // Called from one of the context's own handlers: run the others meanwhile, or nothing
    // (a one-thread context) would ever make `done` true. From inside the executor's strand
    // that cannot help: the strand's handlers (the lanes) wait for this one to return.
    if (here.in_strand) return false;
    boost::asio::io_context* io = here.io;
    if (deadline == Clock::time_point::min()) {
      while (!done() && io->poll_one() > 0) {
      }
      return done();
    }
    while (!done() && Clock::now() < deadline) {
      // run_one_until returns 0 at once on a stopped context: asked only then, so a turn that
      // ran a handler or waited out its slice pays nothing for it.
      if (io->run_one_until(std::min(deadline, Clock::now() + slice)) == 0 && io->stopped() &&
          !done())
        throw_stopped();
    }
    return done();
  }
  if (deadline == Clock::time_point::min()) return false;
  std::unique_lock lock(mutex_);
  drivers_.fetch_add(1, std::memory_order_seq_cst);
  const bool ok = wake_.wait_until(lock, deadline, done);
  drivers_.fetch_sub(1, std::memory_order_relaxed);
  return ok;
}

void AsioScheduler::wake_drivers() noexcept {
  // An RMW, ordered with the driver's increment (see ThreadPoolScheduler::wake_drivers).
  if (drivers_.fetch_add(0, std::memory_order_seq_cst) > 0) {
    { std::lock_guard lock(mutex_); }
    wake_.notify_all();
  }
}

}  // namespace swp
