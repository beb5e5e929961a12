#pragma once
// ParkedWaitWatch: the deadline of a pipeline's parked wait (next()), looked at by one
// periodic timer per run rather than one timer per wait (not for direct use).

#include <atomic>
#include <cstdint>
#include <functional>

#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/timer_queue.hpp"

namespace swp::detail {

/// A coroutine parked on a pipeline (RunDriver::next) holds no thread that could look at its
/// deadline, so a timer must. One timer serves a run: the run's first parked wait arms it,
/// and it ticks every interval until stop() (the run's end). Each tick expires the wait in
/// progress when its deadline passed, then calls `on_tick` (the pipeline checks its
/// sequencer's deadlines and notifies its scheduler, which re-posts the parked wait). Ticks
/// while no wait is in progress do nothing.
///
/// Why not a timer per wait: arming one is a timer-queue node (two allocations) and a wake-up
/// of the timer thread per wait, and on a machine whose cores all run workers that wake-up
/// preempts one of them for tens of microseconds: `co_await pipe.next()` on a two-worker pool
/// ran the dispatch chain's 1 µs stages at the serial loop's speed (docs/benchmarks.md).
///
/// Threads: begin, end and stop are the pipeline driver's (one at a time); expired is read
/// by any thread; the tick runs on the timer thread.
class ParkedWaitWatch {
 public:
  using Id = std::uint64_t;

  ParkedWaitWatch(TimerQueue& timers, std::function<void()> on_tick)
      : timers_(timers), on_tick_(std::move(on_tick)) {}
  ~ParkedWaitWatch() { stop(); }
  ParkedWaitWatch(const ParkedWaitWatch&) = delete;
  ParkedWaitWatch& operator=(const ParkedWaitWatch&) = delete;

  /// A wait with `deadline` (time_point::max(): none) is about to park: its id (never 0).
  /// Arms the ticks, every `interval`, unless they run already.
  Id begin(Clock::time_point deadline, Clock::duration interval);
  /// A tick saw wait `id` past its deadline (0: never).
  [[nodiscard]] bool expired(Id id) const noexcept {
    return id != 0 && expired_.load(std::memory_order_acquire) == id;
  }
  /// Wait `id` resumed: no tick looks at its deadline any more (0: nothing to do).
  void end(Id id) noexcept;
  /// No more ticks; waits for one in progress to return. Idempotent.
  void stop() noexcept;

 private:
  void tick() noexcept;

  TimerQueue& timers_;
  const std::function<void()> on_tick_;
  TimerQueue::Id timer_ = 0;  // the ticks' timer (0: not armed)
  Id last_id_ = 0;            // the last id handed out
  // The wait in progress (0: none) and its deadline, read together by the tick.
  SpinLock lock_;
  Id waiting_ = 0;
  Clock::time_point deadline_;
  std::atomic<Id> expired_{0};  // the last wait a tick expired
};

}  // namespace swp::detail
