#pragma once
// PlanGraph: a plan with its task references resolved to indices, ready for analysis and runs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "swp/core/detail/edge_lists.hpp"
#include "swp/core/detail/flat_positions.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_error.hpp"

namespace swp {

using TaskIndex = std::size_t;

/// A resolved plan: tasks in declaration order, each dependency as an index, per-task
/// dependency lists in the order they were declared (the ready-first pseudocode relies on it).
///
/// Obtain one from `validate(plan)` (throws PlanError unless every rule holds) or
/// `inspect(plan)` (reports violations instead of throwing; edges with unknown tasks are left
/// out of the graph).
class PlanGraph {
 public:
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }
  [[nodiscard]] const std::string& name(TaskIndex t) const { return tasks_[t].task.name; }
  [[nodiscard]] const TaskSchedule& schedule(TaskIndex t) const { return tasks_[t].schedule; }
  [[nodiscard]] int stage(TaskIndex t) const { return tasks_[t].schedule.stage; }
  /// The stream `t`'s device work runs on: its `schedule.stream` with the plan's stream
  /// aliases resolved. Tasks with the same `stream(t)` share one stream (FIFO, no waits).
  [[nodiscard]] const std::string& stream(TaskIndex t) const { return streams_[stream_of_[t]]; }
  /// The distinct streams of stream(t), in the order of their first task: `stream(t)` is
  /// `streams()[stream_index(t)]`.
  [[nodiscard]] const std::vector<std::string>& streams() const noexcept { return streams_; }
  [[nodiscard]] std::size_t stream_index(TaskIndex t) const { return stream_of_[t]; }
  /// The stream name the plan gives `t` (`schedule(t).stream`, alias or not): what schedule
  /// tables show and what the enqueue order compares, as the seed's stream map does.
  [[nodiscard]] const std::string& stream_label(TaskIndex t) const {
    return tasks_[t].schedule.stream;
  }
  /// The priority of the stream `t` runs on (`stream(t)`), as the plan's tasks on that stream
  /// set it (`schedule.stream_priority`), or nothing when none does: what the engines make the
  /// stream with (Runtime::stream).
  [[nodiscard]] std::optional<int> stream_priority(TaskIndex t) const {
    return stream_priorities_[stream_of_[t]];
  }
  /// The priority of `streams()[s]` (see stream_priority).
  [[nodiscard]] std::optional<int> priority_of_stream(std::size_t s) const {
    return stream_priorities_[s];
  }
  [[nodiscard]] const std::string& lane(TaskIndex t) const {
    return tasks_[t].schedule.thread_group;
  }
  /// The distinct lanes of lane(t), in the order of their first task: `lane(t)` is
  /// `lanes()[lane_index(t)]` (what an engine resolves once per lane, not once per task).
  [[nodiscard]] const std::vector<std::string>& lanes() const noexcept { return lanes_; }
  [[nodiscard]] std::size_t lane_index(TaskIndex t) const { return lane_of_[t]; }
  [[nodiscard]] const SyntheticCost& cost(TaskIndex t) const { return tasks_[t].cost; }
  [[nodiscard]] const PlannedTask& task(TaskIndex t) const { return tasks_[t]; }

  /// Tasks `t` depends on within the same iteration, in declaration order.
  [[nodiscard]] std::span<const TaskIndex> intra_deps(TaskIndex t) const { return intra_[t]; }
  /// Tasks of iteration i − 1 that `t` of iteration i depends on, in declaration order.
  [[nodiscard]] std::span<const TaskIndex> inter_deps(TaskIndex t) const { return inter_[t]; }

  /// The tasks in the topological order of the intra dependencies, ties broken by name: of the
  /// tasks whose intra dependencies all come earlier, the one with the smallest name comes
  /// next (equal names, only in an inspected plan: the smaller index). The order run_serial
  /// runs an iteration in and the data-flow engine ranks globally ordered tasks by; computed
  /// once, when the graph is resolved, in O((V + E) log V).
  /// Holds every task when the intra dependencies are acyclic (always after `validate`);
  /// otherwise only the tasks neither on an intra cycle nor depending on one.
  [[nodiscard]] const std::vector<TaskIndex>& topological_order() const { return topological_; }
  /// True when the intra dependencies have no cycle: `topological_order()` holds every task.
  [[nodiscard]] bool acyclic() const { return topological_.size() == tasks_.size(); }

  /// The position of `t`'s name among all the tasks' names in byte order, 0 for the smallest
  /// (equal names, only in an inspected plan: the smaller index first). Comparing ranks orders
  /// tasks as comparing their names does, without reading the names: what the orders that
  /// break ties by name (topological_order, enqueue_order) compare.
  /// Example: `graph.name_rank(a) < graph.name_rank(b)` iff `graph.name(a) < graph.name(b)`.
  [[nodiscard]] std::uint32_t name_rank(TaskIndex t) const { return name_rank_[t]; }

  /// Index of the task called `name`, if any.
  [[nodiscard]] std::optional<TaskIndex> find(std::string_view name) const;

  /// max(stage) + 1: the clock engine's depth (number of periods an iteration spans).
  [[nodiscard]] int depth() const { return depth_; }

  /// Builds the graph and appends every broken rule to `violations` (see `inspect`).
  static PlanGraph resolve(const PipelinePlan& plan, std::vector<PlanViolation>& violations);

 private:
  // find, given the name's hash (std::hash<std::string_view>).
  [[nodiscard]] std::optional<TaskIndex> find(std::string_view name, std::uint64_t hash) const;

  std::vector<PlannedTask> tasks_;
  std::vector<std::string> streams_;  // the distinct resolved streams, by first use
  std::vector<std::uint32_t> stream_of_;  // by task: its stream's position in streams_
  std::vector<std::optional<int>> stream_priorities_;  // of streams_[s]
  std::vector<std::string> lanes_;  // the distinct lanes, by first use
  std::vector<std::uint32_t> lane_of_;  // by task: its lane's position in lanes_
  detail::EdgeLists intra_;
  detail::EdgeLists inter_;
  detail::FlatPositions by_name_;  // tasks_' positions, by name (the first of equal names)
  std::vector<TaskIndex> topological_;  // intra deps first, ties by name
  std::vector<std::uint32_t> name_rank_;  // by task (see name_rank)
  int depth_ = 1;
};

/// Checks every rule and returns the resolved graph.
/// Throws PlanError listing all violations when any rule is broken.
/// Example: `auto graph = swp::validate(plan);`
PlanGraph validate(const PipelinePlan& plan);

/// The graph and every violation, without throwing: what `swp order`, `schedule` and `analyze`
/// use to describe plans that are unsafe to run.
struct Inspection {
  PlanGraph graph;
  std::vector<PlanViolation> violations;

  [[nodiscard]] bool valid() const { return violations.empty(); }
  /// True when some violation is structural (see `is_structural`).
  [[nodiscard]] bool structurally_broken() const;
};
Inspection inspect(const PipelinePlan& plan);

}  // namespace swp
