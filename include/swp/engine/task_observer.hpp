#pragma once
// TaskObserver and TaskWait: watching task instances on the CPU side (traces, tests).

#include <cstdint>

#include "swp/core/plan_graph.hpp"

namespace swp {

class Lane;

/// What a task instance that already holds its lane waits for before its body can run.
///
/// Example: `if (wait.kind == swp::TaskWait::Kind::dependency) log(graph.name(wait.task), wait.iter);`
struct TaskWait {
  enum class Kind : std::uint8_t {
    dependency,  ///< the producer instance (task, iter) has not finished submitting
    turn,        ///< a globally ordered instance waits for its submission turn
  };
  Kind kind = Kind::dependency;
  TaskIndex task = 0;     ///< dependency: the producing task; turn: the waiting task itself
  std::int64_t iter = 0;  ///< dependency: the producer's iteration; turn: the waiting iteration
};

/// Observes the task instances (task, iteration) of a pipeline on the CPU side: the hooks of
/// traces (TraceRecorder, through RunObserver) and of tests. Attach one with
/// `Pipeline::set_observer(&observer)` between runs; detach with `set_observer(nullptr)`.
///
/// Completion and threads: each hook is called synchronously where the event happens —
/// `task_released` on the thread that releases the instance (the caller of progress() or the
/// thread that completed its last dependency), the others on the instance's lane — so hooks of
/// different lanes run concurrently: implementations must be thread-safe and quick (they run
/// on the hot path). For one instance the order is released → (waiting)* → started →
/// finished; a cancelled instance goes from released (or waiting) to finished(ok = false)
/// without starting. Serial runs (`run_one_serial_iter`) report each task released, started
/// and finished on the calling thread, under the task's lane.
/// Errors: the hooks are noexcept; an observer must not throw.
/// Cancellation: none of its own; a failing run reports its cancelled instances as finished
/// with `ok == false`.
///
/// Example:
/// ```
/// struct Starts final : swp::TaskObserver {
///   std::atomic<int> started{0};
///   void task_released(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
///   void task_started(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override { ++started; }
///   void task_finished(swp::TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override {}
/// };
/// Starts starts;
/// pipe.set_observer(&starts);
/// pipe.run(batches);
/// pipe.set_observer(nullptr);
/// ```
class TaskObserver {
 public:
  /// The instance was handed to its lane (in lane submission order).
  virtual void task_released(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept = 0;
  /// The instance started running its body (dependencies satisfied, turn taken).
  virtual void task_started(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept = 0;
  /// The instance, holding its lane, begins to wait for `wait` (before task_started; a wait
  /// lasts until the next task_waiting, task_started or task_finished of the instance).
  /// Not called when the dependency was already satisfied. Whether an instance waits depends
  /// on when it takes its lane, which FastPaths may change: under a lane claim it holds its
  /// lane from its release, so it may report a wait for a producer that has not run yet, where
  /// on the reference path it would sit in its lane's queue behind that producer and report
  /// none. Optional: the default ignores it.
  virtual void task_waiting(TaskIndex task, std::int64_t iter, const Lane& lane,
                            const TaskWait& wait) noexcept {
    (void)task, (void)iter, (void)lane, (void)wait;
  }
  /// The instance finished: its body returned (its device work submitted), or it failed or
  /// was cancelled (`ok == false`).
  virtual void task_finished(TaskIndex task, std::int64_t iter, const Lane& lane,
                             bool ok) noexcept = 0;

 protected:
  ~TaskObserver() = default;
};

}  // namespace swp
