#pragma once
// RunObserver: watches a whole pipeline run, CPU side and device side (a TraceRecorder is one).

#include "swp/core/plan_graph.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp {

/// A TaskObserver of a pipeline and a DeviceObserver of its plan's streams, told when the run
/// starts (so it knows the plan's names and the runtime's clock) and when it ends.
///
/// Whoever runs the pipeline calls `run_starting`, attaches the observer to the pipeline
/// (`Pipeline::set_observer`) and to the streams the plan names, runs, detaches, and calls
/// `run_finished`; `attach_run_observer` / `detach_run_observer` below do the middle steps.
/// `run_synthetic` does all of it for `SyntheticRunOptions::observer`.
/// The callbacks come from lanes and stream threads at once: implementations must be
/// thread-safe.
class RunObserver : public TaskObserver, public DeviceObserver {
 public:
  /// A run of a pipeline over `graph` on `runtime` is about to start; both outlive the run.
  virtual void run_starting(Runtime& runtime, const PlanGraph& graph) = 0;
  /// The run is over and nothing is attached any more.
  virtual void run_finished() noexcept = 0;

 protected:
  ~RunObserver() = default;
};

/// run_starting, then `observer` watches `pipe`, every stream of its plan and the "default"
/// stream (where serial iterations put all device work). The streams' previous observers are
/// replaced (a stream has one). Call between runs, not during one. Serial runs
/// (`run_serial`, `run_one_serial_iter`) are observed too: each task released, started and
/// finished in serial order on the calling thread, reported under the task's lane.
template <class Pipe>
void attach_run_observer(RunObserver& observer, Pipe& pipe) {
  observer.run_starting(pipe.runtime(), pipe.graph());
  pipe.set_observer(&observer);
  for (TaskIndex t = 0; t < pipe.graph().size(); ++t)
    pipe.runtime().stream(pipe.graph().stream(t)).set_observer(&observer);
  pipe.runtime().stream("default").set_observer(&observer);
}

/// Undoes attach_run_observer and calls run_finished. Call after the run (e.g. after `run`
/// returned, or after `drain()`), so no callback is in flight.
template <class Pipe>
void detach_run_observer(RunObserver& observer, Pipe& pipe) {
  pipe.set_observer(nullptr);
  for (TaskIndex t = 0; t < pipe.graph().size(); ++t)
    pipe.runtime().stream(pipe.graph().stream(t)).set_observer(nullptr);
  pipe.runtime().stream("default").set_observer(nullptr);
  observer.run_finished();
}

}  // namespace swp
