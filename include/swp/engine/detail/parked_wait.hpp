#pragma once
// ParkedWait: a co_await that holds no thread until a condition holds, a deadline passes or the
// awaiter gives up (not for direct use; a pipeline's next() waits with it).

#include <chrono>
#include <coroutine>
#include <optional>
#include <stop_token>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/resumer.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/engine/detail/parked_wait_watch.hpp"

namespace swp::detail {

/// ParkedWait's condition: a predicate over some object, without an allocation.
struct ParkedWaitCondition {
  const void* self = nullptr;
  bool (*holds)(const void* self) noexcept = nullptr;
  [[nodiscard]] bool operator()() const noexcept { return holds(self); }
};

/// ParkedWait's extra wake-ups (see there); all null: none.
struct ParkedWaitWakeups {
  void* self = nullptr;
  bool (*watch)(void* self) = nullptr;
  void (*unwatch)(void* self) = nullptr;
};

/// `co_await ParkedWait(...)` parks the awaiting coroutine on `scheduler` (park_unless) rather
/// than blocking a thread. It looks at `ready` again whenever the scheduler is notified and at
/// each tick of `watch`, which also expires it once `limit` passed (ParkedWaitWatch: one timer
/// per run, not one per wait).
///
/// Completion: resumes on the scheduler (or at once, not suspending, when `ready` holds) with
/// true when `ready` holds, false when the deadline passed first. `abandon` (may be null): once
/// it fires the wait resumes too (true unless the deadline passed as well): the caller looks at
/// `abandon`. No cancellation of its own beyond that.
/// `extra` (optional): more things to wake it — called each time it parks until it returns
/// true (it arranged for a notify on something more: the pipeline's device events), then
/// `unwatch` once it resumes.
/// Errors: what ParkedWaitWatch::begin throws (arming its timer), from the co_await.
/// Threads: `ready` runs under the scheduler's park lock, on any thread: a few loads.
///
/// Example (a pipeline's next()):
///   if (!co_await ParkedWait(sched, watch, {this, &holds}, 500ms, 50ms)) time_out();
class ParkedWait final : private Runnable {
 public:
  using Condition = ParkedWaitCondition;
  using ExtraWakeups = ParkedWaitWakeups;

  ParkedWait(Scheduler& scheduler, ParkedWaitWatch& watch, Condition ready,
             std::chrono::milliseconds limit, Clock::duration check_interval,
             const StopSignal* abandon = nullptr, ExtraWakeups extra = {}) noexcept
      : scheduler_(scheduler),
        watch_(watch),
        ready_(ready),
        limit_(limit),
        check_interval_(check_interval),
        abandon_(abandon),
        extra_(extra) {}
  ParkedWait(const ParkedWait&) = delete;
  ParkedWait& operator=(const ParkedWait&) = delete;

  [[nodiscard]] bool await_ready() const noexcept { return ready_(); }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    handle_ = h;
    resumer_ = resumer_of(h);
    // A parked wait looks again when the scheduler is notified: abandoning it notifies.
    if (abandon_ != nullptr) on_abandon_.emplace(abandon_->token(), Notify{&scheduler_});
    const auto deadline = limit_ == std::chrono::milliseconds::max() ? Clock::time_point::max()
                                                                     : Clock::now() + limit_;
    wait_ = watch_.begin(deadline, check_interval_);
    return park();
  }

  bool await_resume() {
    on_abandon_.reset();
    const bool expired = watch_.expired(wait_);
    watch_.end(wait_);
    if (watching_) extra_.unwatch(extra_.self);
    return ready_() || !expired;
  }

 private:
  // Parks unless ready, expired or abandoned; true: parked (and `this` may already be running
  // elsewhere).
  bool park() {
    if (!watching_ && extra_.watch != nullptr) watching_ = extra_.watch(extra_.self);
    return scheduler_.park_unless(*this, [this] {
      return watch_.expired(wait_) || ready_() ||
             (abandon_ != nullptr && abandon_->stop_requested());
    });
  }

  void run() noexcept override {
    if (!park()) resume_on(resumer_, handle_);
  }

  struct Notify {
    Scheduler* scheduler;
    void operator()() const noexcept { scheduler->notify(); }
  };

  Scheduler& scheduler_;
  ParkedWaitWatch& watch_;
  Condition ready_;
  std::chrono::milliseconds limit_;
  Clock::duration check_interval_;
  const StopSignal* abandon_;
  ExtraWakeups extra_;
  std::optional<std::stop_callback<Notify>> on_abandon_;
  std::coroutine_handle<> handle_;
  Resumer* resumer_ = nullptr;
  ParkedWaitWatch::Id wait_ = 0;  // 0: it never parked
  bool watching_ = false;
};

}  // namespace swp::detail
