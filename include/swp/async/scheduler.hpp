#pragma once
// Scheduler: where lanes run. Implementations: ThreadPoolScheduler (host threads) and
// SimScheduler (one thread, virtual time).

#include <chrono>
#include <functional>

namespace swp {

/// Intrusive unit of work a Scheduler runs; a Lane is one. Posting never allocates.
class Runnable {
 public:
  /// Does the work. Must not throw: errors travel in futures, not out of the scheduler.
  virtual void run() noexcept = 0;

  Runnable* next_runnable = nullptr;  ///< queue link, owned by the scheduler while queued

 protected:
  ~Runnable() = default;
};

using Clock = std::chrono::steady_clock;

/// Runs Runnables. Threads that wait for a result (a pipeline's `progress()`) call
/// `drive_until`, which lets a scheduler use the waiting thread for work instead of parking it.
class Scheduler {
 public:
  virtual ~Scheduler() = default;

  /// Runs `r` soon. Any thread. A runnable is posted again only after it started running.
  virtual void post(Runnable& r) noexcept = 0;

  /// Helps run work on the calling thread until `done()` holds or `deadline` passes; returns
  /// `done()`. `done` is evaluated on the calling thread; whoever makes it true must do so with
  /// a seq_cst (or stronger-ordered) store and then call `notify()`. A SimScheduler returns false at once when nothing can make progress anymore.
  virtual bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) = 0;

  /// Wakes threads inside `drive_until` so they evaluate `done()` again. Cheap when none waits.
  virtual void notify() noexcept = 0;

  /// The scheduler's clock: real time for host schedulers, virtual time for SimScheduler.
  [[nodiscard]] virtual Clock::time_point now() const = 0;

  /// True when the scheduler's time is virtual (SimScheduler).
  [[nodiscard]] virtual bool virtual_time() const noexcept { return false; }
};

}  // namespace swp
