#pragma once
// TaskRoutine: what the engine core runs for one task — typed by the pipeline for its context
// type and the task's body, called by the core without knowing either.

#include <cstddef>

#include "swp/async/detail/erased_co.hpp"
#include "swp/engine/detail/output_box.hpp"

namespace swp {

class TaskScope;

namespace detail {

/// One task's routine: its typed body (the plan's bound body itself, shared by every pipeline
/// made from the plan), or its synthetic costs, or a shortcut around either. The core calls it
/// once per instance, on the instance's lane, through this one virtual call, with the context
/// of the instance's slot; a task with nothing to run has no routine.
///
/// Completion: `run` returns an empty ReleasedCo when the work completed synchronously — a
/// body that never suspends costs no coroutine frame — or the body's own coroutine, not
/// started, released from its ErasedCo (which the core adopts at once, and starts on the
/// lane; its value, if any, already routed to `output`).
/// Errors: what the body throws before its first suspension propagates from `run`; later ones
/// come out of the coroutine. Cancellation: the core starts the coroutine with the run's stop
/// signal.
class TaskRoutine {
 public:
  virtual ~TaskRoutine() = default;

  /// Runs the task on `context` (the pipeline's context object of the instance's slot, of
  /// the type the routine was made for) for the instance `scope` describes; a value goes to
  /// `output` (a TypedBox of the task's value type; nullptr when it returns nothing).
  /// Const: one routine may run for several pipelines and instances at once.
  [[nodiscard]] virtual ReleasedCo run(void* context, TaskScope& scope,
                                       OutputBox* output) const = 0;

  /// Whether this is a shortcut around the task (its NVTX range says `[skip]`).
  [[nodiscard]] virtual bool shortcut() const noexcept { return false; }
};

}  // namespace detail
}  // namespace swp
