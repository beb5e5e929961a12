// The calls of engine_handle.hpp: what ctx.get, TaskScope and Retired::get need of the engine
// core, out of line so the public headers do not include the core's header.

#include "swp/engine/detail/engine_handle.hpp"

#include <memory>
#include <string>
#include <utility>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

OutputRead read_output(const CoEnvironment* env, const TaskHandle& producer) {
  if (env == nullptr)
    throw PipelineStateError("ctx.get('" + producer.name + "') called outside a pipeline task");
  const auto& in = static_cast<const Instance&>(*env);
  const PlanGraph& graph = in.core().graph();
  bool declared = false;
  for (TaskIndex d : graph.intra_deps(in.task())) declared = declared || d == producer.index;
  if (!declared || !is_task_of(in.core(), producer))
    throw UndeclaredDependency(
        "task '" + graph.name(in.task()) + "' reads the output of '" + producer.name +
        "' without declaring it: add the task with swp::reads(...) naming '" + producer.name +
        "', or list {\"" + graph.name(in.task()) + "\", \"" + producer.name +
        "\"} in intra_iter_deps, so the plan orders them (and their streams)");
  const Instance& source = in.core().sibling(in, producer.index);
  return {.box = in.slot().boxes[producer.index].get(),
          .error = source.failed ? &source.error() : nullptr};
}

std::function<void()> guard_host_work(const EngineCore& core, TaskIndex task, std::int64_t iter,
                                      std::function<void()> work) {
  // The errors are shared: the stream may run the callable after the pipeline is gone. Stamped
  // now, as it is queued, with the serial iteration queueing it (0: none): it may run later.
  return [errors = core.host_work_errors(), serial = core.host_work_errors()->serial_now(), task,
          iter, work = std::move(work)] {
    try {
      work();
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      try {
        errors->add({.iter = iter, .task = task, .error = error, .serial = serial});
      } catch (...) {
        std::rethrow_exception(error);  // not kept: the stream keeps it (its synchronize())
      }
    }
  };
}

const PlanGraph& graph_of(const EngineCore& core) noexcept { return core.graph(); }

Runtime& runtime_of(const EngineCore& core) noexcept { return core.runtime(); }

bool is_task_of(const EngineCore& core, const TaskHandle& task) noexcept {
  const PlanGraph& graph = core.graph();
  return task.index < graph.size() && graph.name(task.index) == task.name;
}

OutputBox* output_box(const EngineCore& core, std::size_t slot, TaskIndex task) noexcept {
  return core.box(slot, task);
}

}  // namespace swp::detail
