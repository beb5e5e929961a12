#pragma once
// Scheduler: where lanes run. Implementations: ThreadPoolScheduler (host threads),
// SimScheduler (one thread, virtual time), AsioScheduler (a caller's executor), or a user's.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

#include "swp/async/detail/fence.hpp"
#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/spin_lock.hpp"

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

namespace detail {
class RunQueueHooks;  // swp/async/detail/run_queue_hooks.hpp
}  // namespace detail

/// Runs Runnables. Threads that wait for a result (a pipeline's `progress()`) call
/// `drive_until`, which lets a scheduler use the waiting thread for work instead of parking it.
///
/// Writing a scheduler: implement `post`, `drive_until`, `now` and `wake_drivers` (the
/// scheduler's part of `notify()`); the other virtuals have defaults that fit a scheduler
/// with threads of its own and real time. That is all the pipelines need: a Runtime built on
/// it runs data-flow and clock pipelines, serial modes and coroutine waits. A scheduler whose
/// threads have run queues of their own may also offer the pipelines' fast paths (bypasses,
/// batched posts, work run in place) through one optional capability, `run_queue_hooks()`,
/// which the callers ask for once, where they bind to the scheduler (see
/// swp/async/detail/run_queue_hooks.hpp; ThreadPoolScheduler is the one that has them).
class Scheduler {
 public:
  virtual ~Scheduler() = default;

  /// Runs `r` soon. Any thread. A runnable is posted again only after it started running.
  virtual void post(Runnable& r) noexcept = 0;

  /// post(r) from a runnable that is about to return (a continuation, as Asio's `defer`): the
  /// scheduler may run `r` right after it on the same thread, without making it visible to
  /// other threads meanwhile (a bypass: no queue, no wake-up). Call it only at the very end
  /// of a runnable's work: nothing may block between this call and the return, or `r` waits
  /// for it. The default posts.
  virtual void post_next(Runnable& r) noexcept { post(r); }

  /// Helps run work on the calling thread until `done()` holds or `deadline` passes; returns
  /// `done()`. `done` is evaluated on the calling thread; whoever makes it true must do so with
  /// an atomic store (release at least) and then call `notify()`, whose fence orders it. A
  /// SimScheduler returns false at once when nothing can make progress anymore.
  /// `time_point::min()`: run what is runnable now, then return.
  virtual bool drive_until(const std::function<bool()>& done, Clock::time_point deadline) = 0;

  /// True when nothing runs this scheduler's work but the threads that drive it (drive_until):
  /// a pool without workers, virtual time, an event loop run only by its waiters. A wait that
  /// holds no thread (a coroutine parked until work completes) would never end there: the
  /// pipelines' next() drives on the awaiting thread instead, as progress() does. The default
  /// says so for virtual time.
  [[nodiscard]] virtual bool runs_only_when_driven() const noexcept { return virtual_time(); }

  /// Wakes threads inside `drive_until` so they evaluate `done()` again, and posts every
  /// Runnable parked with `park_unless`. Any thread. When none waits it costs one fence and
  /// a load or two, so it can follow every task completion.
  void notify() noexcept {
    // seq_cst fence: the caller's condition change, then the loads of the waiter counts. A
    // waiter registers (seq_cst), then re-checks its condition: the store-buffering pattern,
    // so either the waiter sees the change or this sees the waiter. A fence rather than a
    // read-modify-write keeps the counters' cache lines shared when nobody waits, and it also
    // orders a condition store that was only a release.
    detail::seq_cst_fence();
    // relaxed: ordered by the fence above.
    if (parked_count_.load(std::memory_order_relaxed) > 0) post_parked();
    wake_drivers();
  }

  /// Parks `r` until the next `notify()`, which posts it (once), unless `ready()` already
  /// holds: returns true when `r` was parked, false (and `r` untouched) when ready. How a
  /// waiter that holds no thread (a coroutine awaiting a pipeline's next iteration) learns
  /// that something changed: whoever makes its condition true with a seq_cst store and then
  /// calls `notify()` cannot be missed. After a true return the caller must not touch `r`
  /// (another thread may already run it). `ready` runs under a spin lock: a few atomic loads,
  /// no notify().
  template <class Ready>
  bool park_unless(Runnable& r, Ready&& ready) {
    std::lock_guard lock(parked_lock_);
    // Counted before the check: a notifier that changes the condition after the check sees
    // the count and then waits for this lock, by when `r` is queued. The fence pairs with
    // notify()'s: it orders the count before `ready()`'s loads whatever their memory order.
    parked_count_.fetch_add(1, std::memory_order_seq_cst);
    detail::seq_cst_fence();
    if (ready()) {
      parked_count_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    parked_.push(r);
    return true;
  }

  /// The scheduler's clock: real time for host schedulers, virtual time for SimScheduler.
  [[nodiscard]] virtual Clock::time_point now() const = 0;

  /// True when the scheduler's time is virtual (SimScheduler).
  [[nodiscard]] virtual bool virtual_time() const noexcept { return false; }

  /// True when the calling thread is one the scheduler runs its work on and blocking it would
  /// hold that work back (an AsioScheduler called from a thread running its io_context): the
  /// pipelines refuse a blocking progress()/drain() there (drive_until itself still works,
  /// for the last-resort drain of a destructor).
  [[nodiscard]] virtual bool must_not_block_here() const noexcept { return false; }

  /// The scheduler's optional capability for the pipelines' fast paths (per-thread run
  /// queues: bypass-aware queries, driving sections, post batches, run-here scopes), or
  /// nullptr (the default): callers then use the plain behaviour, which is all a scheduler
  /// needs. Asked once per binding (detail::run_queue_hooks_of), never per task; the result
  /// lives as long as the scheduler.
  [[nodiscard]] virtual detail::RunQueueHooks* run_queue_hooks() noexcept { return nullptr; }

 protected:
  /// The scheduler's part of notify(): wake the threads waiting in drive_until. Called after
  /// notify()'s seq_cst fence, so an implementation may read its waiter count relaxed.
  virtual void wake_drivers() noexcept = 0;

 private:
  void post_parked() noexcept {
    detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> parked;
    {
      std::lock_guard lock(parked_lock_);
      std::swap(parked, parked_);
      parked_count_.store(0, std::memory_order_relaxed);
    }
    while (Runnable* r = parked.pop()) post(*r);
  }

  detail::SpinLock parked_lock_;
  detail::IntrusiveFifo<Runnable, &Runnable::next_runnable> parked_;
  std::atomic<int> parked_count_{0};
};

}  // namespace swp
