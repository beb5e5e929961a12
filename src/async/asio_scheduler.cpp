#include "swp/async/asio_scheduler.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <thread>

namespace swp {

namespace {

// The io_context behind `executor` when the calling thread is running it, else nullptr.
boost::asio::io_context* running_context(const boost::asio::any_io_executor& executor) {
  const auto* io = executor.target<boost::asio::io_context::executor_type>();
  if (io == nullptr || !io->running_in_this_thread()) return nullptr;
  return &io->context();
}

constexpr auto slice = std::chrono::milliseconds(1);  // re-check done() this often when nested

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

bool AsioScheduler::must_not_block_here() const noexcept {
  return running_context(executor_) != nullptr;
}

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
  if (boost::asio::io_context* io = running_context(executor_)) {
    // Called from one of the context's own handlers: run the others meanwhile, or nothing
    // (a one-thread context) would ever make `done` true.
    if (deadline == Clock::time_point::min()) {
      while (!done() && io->poll_one() > 0) {
      }
      return done();
    }
    while (!done() && Clock::now() < deadline)
      io->run_one_until(std::min(deadline, Clock::now() + slice));
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
