#pragma once
// swp::Plan<Ctx>: a plan whose tasks have typed bodies — what a pipeline over Ctx runs.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"
#include "swp/core/detail/plan_index.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/core/task_ref.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/shortcut.hpp"
#include "swp/engine/task_body.hpp"

namespace swp {

/// The producers whose results a task reads within an iteration — their outputs, with
/// `ctx.get`, or the context fields they write: declaring them when the task is added to a
/// swp::Plan adds the intra-iteration dependencies. Made by swp::reads.
class Reads {
 public:
  /// Reads of `producers` (at least one): Output handles, TaskHandles or task names.
  template <class... Producers>
    requires(sizeof...(Producers) > 0 && (std::convertible_to<const Producers&, TaskRef> && ...))
  explicit Reads(const Producers&... producers) : producers_{TaskRef(producers)...} {}

  [[nodiscard]] const std::vector<TaskRef>& producers() const noexcept { return producers_; }

 private:
  std::vector<TaskRef> producers_;
};

/// Declares that a task reads the outputs of `producers` (see Plan::add).
/// Example: `plan.add("Forward", forward, {.stage = 1}, swp::reads(h2d, ids));`
template <class... Producers>
  requires(sizeof...(Producers) > 0 && (std::convertible_to<const Producers&, TaskRef> && ...))
[[nodiscard]] Reads reads(const Producers&... producers) {
  return Reads(producers...);
}

/// A plan whose tasks carry bodies bound for contexts `Ctx` (an IterContext): what a
/// DataFlowPipeline<Ctx> or ClockPipeline<Ctx> runs. The schedule part — names, stages,
/// streams, lanes, dependencies, costs, DeclaredIO — is a plain PipelinePlan (`untyped()`);
/// the bodies are stored here, by task, typed: a body for another context type does not
/// compile (TaskFunction), and a pipeline over another context type does not accept the plan.
///
/// The PipelinePlan is a private base: its members are public here (`tasks`,
/// `intra_iter_deps`, `inter_iter_deps`, `pipeline_depth`, `stream_aliases`, bodiless `add`),
/// but a Plan does not convert to a PipelinePlan by itself, so its bodies are never dropped by
/// accident. Pass `untyped()` where the plain plan is meant (validate, plan_to_json,
/// tune_plan, a pipeline on synthetic costs).
///
/// Reads: `add(name, fn, schedule, swp::reads(a, b))` declares that the task reads a's and b's
/// outputs (`co_await ctx.get(a)`); each read appends {task, producer} to `intra_iter_deps`
/// unless that pair is listed already, so validation, the orders, the schedule table and JSON
/// see it exactly once. Append other dependencies to `intra_iter_deps` rather than assigning
/// it: a pipeline refuses a plan whose declared reads are missing from it.
///
/// Completion: building a plan runs nothing; its bodies run in the pipelines made from it
/// (copies of the plan share each body's callable). Errors: per member below; names and rules
/// are checked when a pipeline is made (PlanError). Cancellation: none of its own.
///
/// Example:
/// ```
/// swp::Plan<Ctx> plan;
/// auto h2d = plan.add("H2D", [](Ctx& ctx) -> swp::Co<Tensor> { co_return copy(ctx.batch); },
///                     {.stage = 0, .stream = "memcpy"});
/// auto fwd = plan.add("Forward", [h2d](Ctx& ctx) -> swp::Co<void> {
///   const Tensor& x = co_await ctx.get(h2d);
///   ctx.loss = forward(x);
/// }, {.stage = 1}, swp::reads(h2d));
/// swp::DataFlowPipeline<Ctx> pipe(runtime, plan, /*max_depth=*/3);
/// ```
template <class Ctx>
class Plan : private PipelinePlan {
 public:
  using context_type = Ctx;
  using body_type = TaskBody<Ctx>;

  using PipelinePlan::add;
  using PipelinePlan::device_stream;
  using PipelinePlan::inter_iter_deps;
  using PipelinePlan::intra_iter_deps;
  using PipelinePlan::pipeline_depth;
  using PipelinePlan::stream_aliases;
  using PipelinePlan::tasks;

  Plan() = default;

  /// The tasks, schedules and dependencies of `plan`, without bodies yet: bind them by name
  /// (a plan read from JSON, a preset's plan).
  explicit Plan(PipelinePlan plan) : PipelinePlan(std::move(plan)) {}

  /// Appends a task called `name` running `fn` and returns the handle of its output, for
  /// `ctx.get` (an `Output<T>`; `Output<void>` when it returns nothing).
  /// Names are checked by validation (when a pipeline is made), not here.
  template <class Fn>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx>
  Output<task_value_t<Fn, Ctx>> add(std::string name, Fn&& fn, TaskSchedule schedule = {},
                                    SyntheticCost cost = {}) {
    const TaskHandle h = PipelinePlan::add(PipelineTask(std::move(name)), std::move(schedule), cost);
    set_body(h.index, TaskBody<Ctx>(std::forward<Fn>(fn)));
    return Output<task_value_t<Fn, Ctx>>{h};
  }

  /// As above, and declares the task's reads: for each producer, {task, producer} joins
  /// `intra_iter_deps` unless it is listed there already.
  /// Example: `auto bwd = plan.add("Backward", backward, {.stage = 1}, swp::reads(fwd, h2d));`
  template <class Fn>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx>
  Output<task_value_t<Fn, Ctx>> add(std::string name, Fn&& fn, TaskSchedule schedule,
                                    const Reads& reads, SyntheticCost cost = {}) {
    auto h = add(std::move(name), std::forward<Fn>(fn), std::move(schedule), cost);
    for (const TaskRef& producer : reads.producers()) declare_read(h, producer);
    return h;
  }

  /// Binds `fn` as the body of the plan's task `task` (a handle or a name) and returns the
  /// handle of its output. Throws std::invalid_argument when the plan has no such task or its
  /// body is bound already.
  /// Example: `swp::Plan<Ctx> plan(swp::load_plan("plan.json").plan); plan.bind("H2D", copy_batch);`
  template <class Fn>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx>
  Output<task_value_t<Fn, Ctx>> bind(const TaskRef& task, Fn&& fn) {
    return Output<task_value_t<Fn, Ctx>>{bind(task, TaskBody<Ctx>(std::forward<Fn>(fn)))};
  }

  /// Binds a prepared body (e.g. one declaring its writes) to the plan's task `task`.
  /// Same errors as above.
  TaskHandle bind(const TaskRef& task, TaskBody<Ctx> body) {
    const std::size_t index = find(task, "bind");
    if (index < bodies_.size() && bodies_[index])
      throw std::invalid_argument("bind: task '" + task.name() + "' has a body already");
    set_body(index, std::move(body));
    return TaskHandle{index, tasks[index].task.name};
  }

  /// Declares more context fields `task` writes (see swp::writes), for shortcut replay.
  /// Throws std::invalid_argument when `task` is not in the plan or has no body.
  template <class Fields>
    requires std::derived_from<Ctx, Fields>
  void declare_writes(const TaskRef& task, const Writes<Fields>& writes) {
    const std::size_t index = find(task, "declare_writes");
    if (index >= bodies_.size() || !bodies_[index])
      throw std::invalid_argument("declare_writes: task '" + task.name() + "' has no body");
    if constexpr (std::is_same_v<Fields, Ctx>) {
      bodies_[index]->body.writes.append(writes);
    } else {
      bodies_[index]->body.writes.append(writes.template rebind<Ctx>());
    }
  }

  /// Declares a DeclaredIO of `task` (state outside the context it reads and writes).
  /// Throws std::invalid_argument when `task` is not in the plan.
  void declare_io(const TaskRef& task, DeclaredIO io) {
    tasks[find(task, "declare_io")].task.io.push_back(std::move(io));
  }

  /// The body bound to `task`, or nullptr (no body, or no such task).
  [[nodiscard]] const TaskBody<Ctx>* body(const TaskRef& task) const {
    if (const TaskHandle* h = task.handle(); h != nullptr && h->index < tasks.size() &&
                                             h->index < bodies_.size() &&
                                             tasks[h->index].task.name == h->name)
      return bodies_[h->index] ? &bodies_[h->index]->body : nullptr;
    for (std::size_t t = 0; t < tasks.size() && t < bodies_.size(); ++t)
      if (tasks[t].task.name == task.name() && bodies_[t]) return &bodies_[t]->body;
    return nullptr;
  }

  /// The reads declared with `add`, as dependencies {task, producer}.
  [[nodiscard]] const std::vector<Dependency>& reads() const noexcept { return reads_; }

  /// The plain plan: names, schedules, dependencies (declared reads included), costs and
  /// DeclaredIO, without the bodies.
  [[nodiscard]] const PipelinePlan& untyped() const noexcept { return *this; }

  /// The bodies by task index (empty: the task runs its synthetic costs), for a pipeline.
  /// Throws std::invalid_argument when the tasks changed under the bodies (a task removed or
  /// reordered after its body was bound) or a declared read is no longer in
  /// `intra_iter_deps` (the list was assigned after the task was added), naming the tasks.
  [[nodiscard]] std::vector<std::optional<TaskBody<Ctx>>> bound_bodies() const {
    std::vector<std::optional<TaskBody<Ctx>>> out(tasks.size());
    for (std::size_t t = 0; t < bodies_.size(); ++t) {
      if (!bodies_[t]) continue;
      if (t >= tasks.size() || tasks[t].task.name != bodies_[t]->task)
        throw std::invalid_argument(
            "the body bound for task '" + bodies_[t]->task + "' is at position " +
            std::to_string(t) + ", which " +
            (t >= tasks.size() ? std::string("the plan no longer has")
                               : "now holds task '" + tasks[t].task.name + "'") +
            ": tasks were removed or reordered after their bodies were bound");
      out[t] = bodies_[t]->body;
    }
    if (!detail::lists_in_order(intra_iter_deps, reads_)) check_reads_listed();
    return out;
  }

 private:
  struct Bound {
    std::string task;  // the name the body was bound for (tasks must not move under it)
    TaskBody<Ctx> body;
  };

  // Every declared read is in intra_iter_deps; throws naming the first that is not. The exact
  // check behind bound_bodies' sequential one, for a list that was reordered in place.
  void check_reads_listed() const {
    detail::DependencyIndex listed;  // fresh: trusts nothing done to the list in place
    for (std::size_t k = 0; k < reads_.size(); ++k) {
      const Dependency& read = reads_[k];
      listed.prefetch(intra_iter_deps, reads_[std::min(k + 8, reads_.size() - 1)]);
      if (!listed.lists(intra_iter_deps, read))
        throw std::invalid_argument(
            "task '" + read.task.name() + "' declares that it reads '" + read.depends_on.name() +
            "' (swp::reads), but intra_iter_deps no longer lists {\"" + read.task.name() +
            "\", \"" + read.depends_on.name() +
            "\"}: it was assigned after the task was added; append to it instead");
    }
  }

  std::size_t find(const TaskRef& task, const char* what) {
    if (const TaskHandle* h = task.handle();
        h != nullptr && h->index < tasks.size() && tasks[h->index].task.name == h->name)
      return h->index;
    if (const std::size_t t = names_.find(tasks, task.name()); t < tasks.size()) return t;
    throw std::invalid_argument(std::string(what) + ": '" + task.name() +
                                "' is not a task of this plan");
  }

  void set_body(std::size_t index, TaskBody<Ctx> body) {
    if (bodies_.size() <= index) bodies_.resize(index + 1);
    bodies_[index].emplace(Bound{tasks[index].task.name, std::move(body)});
  }

  void declare_read(const TaskHandle& task, const TaskRef& producer) {
    const Dependency read{task, producer};
    reads_.push_back(read);
    if (!listed_.lists(intra_iter_deps, read)) intra_iter_deps.push_back(read);
  }

  std::vector<std::optional<Bound>> bodies_;  // by task index
  std::vector<Dependency> reads_;
  // Linear construction: a plan of n tasks declares its reads and binds by name in O(n).
  detail::DependencyIndex listed_;  // intra_iter_deps
  detail::TaskNameIndex names_;     // tasks
};

}  // namespace swp
