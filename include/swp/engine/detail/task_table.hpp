#pragma once
// TaskTable: what the engine core knows of each task, built once from its plan (not for direct
// use) — the TaskInfo every instance of the task points at, the successor lists its spans
// point into, the distinct streams, the serial order and the join counts.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "swp/async/lane.hpp"
#include "swp/core/detail/successor_lists.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/detail/task_routine.hpp"

namespace swp {

class Runtime;

namespace detail {

class LaneClaim;

/// What the hot path reads about a task, in one place (the table's, one per task; each
/// instance points at its task's).
struct TaskInfo {
  std::span<const TaskIndex> intra, inter;            // dependencies
  std::span<const TaskIndex> intra_succ, inter_succ;  // dependents
  Lane* lane = nullptr;
  Stream* stream = nullptr;
  const TaskRoutine* routine = nullptr;  // what its body is (nullptr: nothing to run)
  // Its index (fewer than 2^31: TaskTable checks), read by its instances: one load from a line
  // the step reads anyway, not a computation from the instance's address.
  std::uint32_t task = 0;
  int degree_first = 0;  // join counter in the run's first iteration (TaskTable::count_joins)
  int degree = 0;        // join counter in every later iteration
  bool ordered = false;
  // Ordered, or with inter dependencies (whose device work it may have to wait for): its
  // proceed looks at more than the common case's conditions.
  bool proceeds_guarded = false;
  // Its finish counts towards its iteration's completion (IterationSync::remaining).
  bool counts_completion = true;
  // Its instance waits for the task's instance before it (the lane edge; see LaneClaim).
  // With lane claims on, every task that is not globally ordered has one (set by the core):
  // under a claim its instances bypass the lane, which would otherwise order them; sharing a
  // lane, a task's instances run in the order they reach it, and a producer under a claim
  // can release the next iteration's before this one's (its next instance runs as soon as
  // its counter allows, not after its finish ends, as a lane would start it).
  bool lane_edge = false;
  // Its lane's claim (see LaneClaim), for a task alone on its lane; nullptr: none. Set by the
  // core.
  LaneClaim* claim = nullptr;
  // It has a lane claim (so it is not globally ordered) and its lane runs on the runtime's
  // scheduler: with one thread, both engines run its ready instances where they release them
  // (InPlaceRuns::run). Set by the core.
  bool in_place = false;
};

/// The tasks of a plan as the engine core runs them. Built in two steps, because the release
/// policy is made between them and reads the first (data-flow's admission looks at each
/// task's dependencies and lane edge):
/// - the constructor resolves each task's lane and stream in the runtime (each distinct one
///   once), and fills in its dependencies, dependents and order; the core then gives the tasks
///   their lane edges and those alone on their lanes their claims (TaskInfo::lane_edge,
///   claim, in_place);
/// - count_joins(policy) sets each task's join counts (dependencies, the lane edge and what
///   the policy counts besides) and which tasks count towards their iteration's completion.
/// Errors: a plan of 2^31 tasks or more is a std::length_error (an instance keeps its task in
/// 31 bits); the runtime's lane and stream lookups throw as they do.
///
/// Example (the core's constructor):
///   TaskTable tasks(graph, runtime);
///   ... claims for tasks.alone_on_lane(t) ...
///   tasks.count_joins(*release);
class TaskTable {
 public:
  /// Reads `graph`, which must outlive the table (TaskInfo's dependency spans point into it).
  TaskTable(const PlanGraph& graph, Runtime& runtime);
  TaskTable(TaskTable&&) = delete;  // instances and policies keep addresses of its entries

  /// Sets degree_first, degree and counts_completion of every task, once its lane edge is
  /// known, as `policy` counts them (ReleasePolicy::extra_degree, releases_every_instance).
  void count_joins(const ReleasePolicy& policy);

  [[nodiscard]] TaskInfo& operator[](TaskIndex t) noexcept { return info_[t]; }
  [[nodiscard]] const TaskInfo& operator[](TaskIndex t) const noexcept { return info_[t]; }
  [[nodiscard]] std::size_t size() const noexcept { return info_.size(); }
  [[nodiscard]] std::span<const TaskInfo> all() const noexcept { return info_; }
  /// Whether `t` is the only task on its lane (a candidate for a lane claim, see LaneClaim).
  [[nodiscard]] bool alone_on_lane(TaskIndex t) const noexcept { return alone_on_lane_[t]; }
  /// Topological order of the intra-iteration dependencies, ties by name (a serial
  /// iteration's order, see PlanGraph::topological_order).
  [[nodiscard]] const std::vector<TaskIndex>& serial_order() const noexcept {
    return serial_order_;
  }
  /// The distinct streams of the tasks (PlanGraph::streams), resolved in the runtime.
  [[nodiscard]] const std::vector<Stream*>& streams() const noexcept { return streams_; }
  /// How many instances of an iteration count towards its completion (counts_completion),
  /// after count_joins.
  [[nodiscard]] int completion_count() const noexcept { return completion_count_; }

 private:
  // The join counter of t's instance in iteration `iter` of a run (0: its first).
  [[nodiscard]] int in_degree(const ReleasePolicy& policy, TaskIndex t,
                              std::int64_t iter) const noexcept;

  std::vector<TaskInfo> info_;
  std::vector<bool> alone_on_lane_;
  SuccessorLists intra_succ_, inter_succ_;  // TaskInfo's spans of dependents point here
  std::vector<TaskIndex> serial_order_;
  std::vector<Stream*> streams_;
  int completion_count_ = 0;
};

}  // namespace detail
}  // namespace swp
