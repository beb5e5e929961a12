#include "swp/async/thread_pool_scheduler.hpp"

#include <algorithm>
#include <utility>

namespace swp {

namespace {

// The scheduler whose Runnable this thread is running, and the Runnable to run next.
struct ThreadSlot {
  ThreadPoolScheduler* owner = nullptr;
  Runnable* next = nullptr;
};
[[gnu::tls_model("initial-exec")]] thread_local ThreadSlot slot;

constexpr int max_chain = 64;  // after this many slot hand-offs, go through the queue again

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

unsigned ThreadPoolScheduler::default_workers() noexcept {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 1 ? hw - 1 : 1;
}

ThreadPoolScheduler::ThreadPoolScheduler(unsigned workers, std::chrono::microseconds spin)
    : spin_(spin) {
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i)
    threads_.emplace_back([this](const std::stop_token& stop) { worker_loop(stop); });
}

ThreadPoolScheduler::~ThreadPoolScheduler() {
  for (auto& t : threads_) t.request_stop();
  {
    std::lock_guard lock(mutex_);
  }
  wake_.notify_all();
  threads_.clear();  // joins
}

void ThreadPoolScheduler::push(Runnable& r) noexcept {
  {
    std::lock_guard lock(mutex_);
    queue_.push(r);
    queued_.fetch_add(1, std::memory_order_seq_cst);
  }
  // seq_cst pairs with the sleeper's increment + re-check: either it sees queued_ > 0 or we
  // see it counted in sleepers_.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake_.notify_one();
}

Runnable* ThreadPoolScheduler::try_pop() noexcept {
  if (queued_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard lock(mutex_);
  Runnable* r = queue_.pop();
  if (r != nullptr) queued_.fetch_sub(1, std::memory_order_relaxed);
  return r;
}

void ThreadPoolScheduler::post(Runnable& r) noexcept {
  if (slot.owner == this) {
    // Newest work takes the slot (it continues what this thread just did); the previous
    // occupant goes to the shared queue where another thread can take it.
    if (Runnable* previous = std::exchange(slot.next, &r)) push(*previous);
    return;
  }
  push(r);
}

void ThreadPoolScheduler::run_chain(Runnable* first) noexcept {
  ThreadSlot saved = std::exchange(slot, ThreadSlot{this, nullptr});
  Runnable* r = first;
  for (int n = 0; r != nullptr; ++n) {
    r->run();
    r = std::exchange(slot.next, nullptr);
    if (r != nullptr && n >= max_chain) {
      push(*r);
      r = nullptr;
    }
  }
  slot = saved;
}

void ThreadPoolScheduler::wake_drivers() noexcept {
  // A read-modify-write, not a fence + load: it is ordered with the sleeper's increment in
  // the single total order of seq_cst operations (and ThreadSanitizer understands it).
  if (sleepers_.fetch_add(0, std::memory_order_seq_cst) > 0) {
    { std::lock_guard lock(mutex_); }  // a sleeper between its check and its wait holds mutex_
    wake_.notify_all();
  }
}

void ThreadPoolScheduler::worker_loop(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    if (Runnable* r = try_pop()) {
      run_chain(r);
      continue;
    }
    // Workers park at once: measured on 2 cores, a spinning worker stealing the tiny tasks a
    // helping caller is about to run costs more than the wake-ups it saves. Callers in
    // drive_until spin (below), since they wait for results that arrive microseconds later.
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return !queue_.empty() || stop.stop_requested(); });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

bool ThreadPoolScheduler::drive_until(const std::function<bool()>& done,
                                      Clock::time_point deadline) {
  for (;;) {
    if (done()) return true;
    if (Runnable* r = try_pop()) {
      run_chain(r);
      continue;
    }
    if (deadline == Clock::time_point::min()) return done();  // run what is runnable, no wait
    const auto spin_end = std::min(deadline, Clock::now() + spin_);
    bool ready = false;
    while (!(ready = done()) && queued_.load(std::memory_order_relaxed) == 0 &&
           Clock::now() < spin_end)
      cpu_relax();
    if (ready) return true;
    if (queued_.load(std::memory_order_relaxed) != 0) continue;
    if (Clock::now() >= deadline) return done();
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait_until(lock, deadline, [&] { return !queue_.empty() || done(); });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace swp
