#pragma once
// The engine core as the public headers' templates see it (not for direct use): a forward
// declaration and the few calls they make into it, defined in src/engine/engine_handle.cpp.
// iter_context.hpp and retired.hpp include this rather than engine_core.hpp, so a user's
// translation unit that names a context or a Retired does not compile the core's internals.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>

#include "swp/async/co.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/core/task_ref.hpp"
#include "swp/engine/detail/output_box.hpp"

namespace swp {
class Runtime;
}

namespace swp::detail {

class EngineCore;

/// The plan graph `core` runs (TaskScope::name).
[[nodiscard]] const PlanGraph& graph_of(const EngineCore& core) noexcept;
/// The runtime `core` runs on (TaskScope::runtime).
[[nodiscard]] Runtime& runtime_of(const EngineCore& core) noexcept;

/// What `ctx.get(producer)` reads: the producer's output box in the running iteration, and
/// its error when it failed (nullptr otherwise). Both live as long as the iteration's slot.
struct OutputRead {
  OutputBox* box = nullptr;
  const std::exception_ptr* error = nullptr;
};

/// The read of `producer`'s output by the task instance that lent `env` to its coroutine.
/// One call out of line per read, doing what the awaiter did inline (the declared-dependency
/// check and two loads), so no pointer more is followed on the way.
/// Errors: PipelineStateError when `env` is no engine's instance (ctx.get outside a pipeline
/// task); UndeclaredDependency naming both tasks when the running task did not declare the
/// read, or `producer` is no task of its plan.
OutputRead read_output(const CoEnvironment* env, const TaskHandle& producer);

/// `work` (a callable TaskScope::enqueue queues for `task` of iteration `iter`) wrapped so that
/// what it throws is kept as that task's failure in that iteration (HostWorkErrors), which the
/// engine reports, instead of the stream's error. Errors: std::bad_alloc.
std::function<void()> guard_host_work(const EngineCore& core, TaskIndex task, std::int64_t iter,
                                      std::function<void()> work);

/// Whether `task` names a task of `core`'s plan (its index is one, under its name).
[[nodiscard]] bool is_task_of(const EngineCore& core, const TaskHandle& task) noexcept;

/// The output box of `task` for the iteration in context slot `slot` (nullptr: none yet).
[[nodiscard]] OutputBox* output_box(const EngineCore& core, std::size_t slot,
                                    TaskIndex task) noexcept;

}  // namespace swp::detail
