#pragma once
// RunObserver: watches a whole pipeline run, CPU side and device side (a TraceRecorder is one).

#include <algorithm>
#include <string>
#include <vector>

#include "swp/core/plan_graph.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp {

namespace detail {

// The streams a run of `pipe` puts device work on: its plan's and "default".
template <class Pipe>
std::vector<Stream*> observed_streams(Pipe& pipe) {
  std::vector<Stream*> streams;
  const auto add = [&](const std::string& name) {
    Stream* s = &pipe.runtime().stream(name);
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
  };
  for (const std::string& name : pipe.graph().streams()) add(name);  // each distinct once
  add("default");
  return streams;
}

}  // namespace detail

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
/// stream (where serial iterations put all device work). Serial runs (`run_serial`,
/// `run_one_serial_iter`) are observed too: each task released, started and finished in
/// serial order on the calling thread, reported under the task's lane. Call between runs, not
/// during one.
/// Errors: the streams belong to the runtime and are shared by every pipeline on it, and a
/// stream has one observer; when one of them already reports to another observer (attached
/// for another pipeline, or not detached), throws std::logic_error naming that stream and
/// both observers, before anything was attached or run_starting called. Attaching the same
/// observer again is fine. The pipeline's refusal of set_observer (PipelineStateError while
/// a run is in progress or a call drives the pipeline, see Pipeline::set_timeouts) comes
/// before run_starting too; when run_starting throws, the pipeline gets its observer before
/// back and nothing is attached. Either way the error reaches the caller, and the observer
/// sees no start without a finish.
/// Example:
/// ```
/// swp::TraceRecorder rec;
/// swp::attach_run_observer(rec, pipe);
/// pipe.run(batches);
/// swp::detach_run_observer(rec, pipe);
/// ```
template <class Pipe>
void attach_run_observer(RunObserver& observer, Pipe& pipe) {
  const std::vector<Stream*> streams = detail::observed_streams(pipe);
  for (Stream* s : streams)
    if (s->observer() != nullptr && s->observer() != &observer)
      s->set_observer(&observer);  // throws, naming both, before anything was attached
  // The pipeline first: it refuses between-runs setters mid-run, and the observer must not
  // have been told of a start then.
  TaskObserver* const before = pipe.observer();
  pipe.set_observer(&observer);
  try {
    observer.run_starting(pipe.runtime(), pipe.graph());
  } catch (...) {
    pipe.set_observer(before);  // accepted: nothing ran since the call above was
    throw;
  }
  for (Stream* s : streams) s->set_observer(&observer);
}

/// Undoes attach_run_observer and calls run_finished. Call after the run (e.g. after `run`
/// returned, or after `drain()`), so no callback is in flight. Streams that report to another
/// observer are left alone.
template <class Pipe>
void detach_run_observer(RunObserver& observer, Pipe& pipe) {
  pipe.set_observer(nullptr);
  for (Stream* s : detail::observed_streams(pipe))
    if (s->observer() == &observer) s->set_observer(nullptr);
  observer.run_finished();
}

}  // namespace swp
