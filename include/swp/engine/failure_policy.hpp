#pragma once
// FailurePolicy: what a failed task does to the run it belongs to.

#include <cstdint>

namespace swp {

/// What a task's error does to a pipeline's run (Pipeline::set_failure_policy). Either way
/// every admitted iteration is accounted for exactly once: it retires (on_retire, and
/// progress()/next() return it), or it is reported failed or cancelled (on_failure, with its
/// error) — none is dropped.
enum class FailurePolicy : std::uint8_t {
  /// The default: the first error fails the whole run. Its stop signal wakes every cancellable
  /// wait, everything in flight drains, each iteration in flight that did not retire goes to
  /// on_failure (the failed one with its TaskError, the others with swp::Cancelled naming the
  /// cause), then progress()/next() throw the TaskError. The pipeline can be filled again.
  fail_run,
  /// A failed iteration is skipped, the run goes on: the tasks of that iteration that depend on
  /// the failed one finish without running (with its error), the other iterations in flight
  /// and the ones after keep running — their inter-iteration dependencies on the failed
  /// iteration count as met (it finished, whatever it left undone). The iteration retires in
  /// its turn as failed: on_failure gets it with a TaskError naming the task (not on_retire),
  /// progress()/next() return it with Retired::failed(). A globally ordered task of a failed
  /// iteration still takes its submission turn (without running), so every rank submits the
  /// same sequence. Deadlines, cancel() and errors of the source or of the callbacks still end
  /// the run as under fail_run.
  skip,
};

}  // namespace swp
