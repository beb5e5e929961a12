#pragma once
// DrivenWait: a pipeline driver's blocking waits, which run the scheduler's work on the waiting
// thread until a condition holds or a deadline passes (not for direct use).

#include <chrono>
#include <functional>
#include <optional>
#include <utility>

#include "swp/async/scheduler.hpp"
#include "swp/engine/engine_timeouts.hpp"

namespace swp::detail {

/// The waits of progress(), drain() and a pipeline's teardown: the calling thread drives the
/// scheduler (drive_until) while it waits, so a pool without workers, virtual time or an event
/// loop run by its waiters goes on meanwhile. Each first runs what is runnable, which is
/// usually all it takes and reads no clock. Past that a wait with a deadline looks at the
/// clock every `timeouts.check_interval` and calls `on_check` there (the pipeline checks its
/// sequencer's deadlines).
///
/// Virtual time: deadlines do not apply to the model (a task may model minutes), and a wait
/// that cannot end is known at once: it returns false when nothing is left to run.
///
/// A scheduler that cannot drive from the waiting thread (its drive_until returns early, as an
/// AsioScheduler's inside its strand): the wait blocks instead, looking at the condition (and
/// so at a cancellation it includes) once every `check_interval`, to the same deadline.
///
/// Errors: what the scheduler's drive_until and `on_check` throw. Cancellation: none of its
/// own; the condition includes the run's stop where the caller wants one.
///
/// Example: `if (!wait.until([&] { return drained(); }, timeouts.drain)) die();`
class DrivenWait {
 public:
  /// `timeouts` is read at each wait (a pipeline's set_timeouts changes it between runs).
  DrivenWait(Scheduler& scheduler, const EngineTimeouts& timeouts, std::function<void()> on_check)
      : scheduler_(scheduler), timeouts_(timeouts), on_check_(std::move(on_check)) {}

  /// Waits until `done` holds (true) or `limit` passed (false).
  bool until(const std::function<bool()>& done, std::chrono::milliseconds limit);
  /// The same with the deadline counted from `started`, which the first wait that has to look
  /// at the clock sets (a call retiring iteration after iteration keeps one deadline).
  bool until(const std::function<bool()>& done, std::chrono::milliseconds limit,
             std::optional<Clock::time_point>& started);
  /// Without a deadline (a service's source may idle for hours): true once `ready` holds;
  /// false only on virtual time, when nothing left to run can make it true.
  bool until_ever(const std::function<bool()>& ready);
  /// What is left of `limit` counted from `started` (set to now when unset), at least 0.
  [[nodiscard]] std::chrono::milliseconds time_left(
      std::chrono::milliseconds limit, std::optional<Clock::time_point>& started) const;

 private:
  // until() once what was runnable did not make `done` true.
  bool past_runnable(const std::function<bool()>& done, std::chrono::milliseconds limit);
  // Drives until `done` or `until`; where drive_until returns early without `done` (it cannot
  // drive from this thread), sleeps until `until` instead of returning at once.
  void drive_slice(const std::function<bool()>& done, Clock::time_point until);

  Scheduler& scheduler_;
  const EngineTimeouts& timeouts_;
  const std::function<void()> on_check_;
};

}  // namespace swp::detail
