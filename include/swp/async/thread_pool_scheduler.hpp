#pragma once
// ThreadPoolScheduler: the host scheduler, a few worker threads plus the threads that wait.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/scheduler.hpp"

namespace swp {

/// Runs lanes on `workers` background threads and on every thread that waits in
/// `drive_until` (a pipeline's caller helps instead of sleeping).
///
/// Two choices keep hand-offs cheap, since waking a parked thread costs ~10 µs on the machines
/// we target while a pipeline task may take 100 ns: a Runnable posted from inside a running
/// Runnable goes to the posting thread's "next" slot and runs right after it (a chain H2D →
/// InputDist → Forward of one iteration stays on one warm thread), and a thread waiting in
/// drive_until spins briefly before it parks (workers park at once: on 2 cores a spinning
/// worker stealing the tiny tasks the helping caller is about to run cost more than it saved).
class ThreadPoolScheduler final : public Scheduler {
 public:
  /// `workers` background threads (0: only threads in drive_until run work).
  /// `spin` is how long a thread waiting in drive_until polls before it parks.
  explicit ThreadPoolScheduler(unsigned workers,
                               std::chrono::microseconds spin = std::chrono::microseconds(50));
  ~ThreadPoolScheduler() override;

  ThreadPoolScheduler(const ThreadPoolScheduler&) = delete;
  ThreadPoolScheduler& operator=(const ThreadPoolScheduler&) = delete;

  void post(Runnable& r) noexcept override;
  bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) override;
  [[nodiscard]] Clock::time_point now() const override { return Clock::now(); }

  [[nodiscard]] unsigned workers() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// Default worker count: one less than the hardware threads (the caller is the other), min 1.
  static unsigned default_workers() noexcept;

 protected:
  void wake_drivers() noexcept override;

 private:
  void worker_loop(const std::stop_token& stop);
  Runnable* try_pop() noexcept;
  void push(Runnable& r) noexcept;
  // Runs `first`, then whatever lands in this thread's next slot, bounded for fairness.
  void run_chain(Runnable* first) noexcept;

  std::mutex mutex_;
  std::condition_variable wake_;
  detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> queue_;  // guarded by mutex_
  std::atomic<int> queued_{0};    // lets idle threads poll without the mutex
  std::atomic<int> sleepers_{0};  // threads parked (or about to park) on wake_
  std::chrono::microseconds spin_;
  std::vector<std::jthread> threads_;
};

}  // namespace swp
