#pragma once
// PipelinePlan: the complete declarative schedule of a pipeline (seed 003, class PipelinePlan).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swp/core/pipeline_task.hpp"
#include "swp/core/synthetic_cost.hpp"
#include "swp/core/task_ref.hpp"
#include "swp/core/task_schedule.hpp"

namespace swp {

/// One task of a plan with its schedule and (optional) synthetic cost.
struct PlannedTask {
  PipelineTask task;
  TaskSchedule schedule;
  SyntheticCost cost;
};

/// A dependency pair as the seed writes it: `task` depends on `depends_on`.
/// In `intra_iter_deps` both refer to the same iteration i; in `inter_iter_deps` `task` of
/// iteration i depends on `depends_on` of iteration i − 1.
struct Dependency {
  TaskRef task;
  TaskRef depends_on;

  friend bool operator==(const Dependency&, const Dependency&) = default;
};

/// Separates what runs (tasks) from how it is scheduled (stages, streams, lanes, deps).
/// A plan is plain data and may be invalid; `validate()` checks it and resolves it into a
/// PlanGraph, which the orders, the schedule table and the engines use. It holds no bodies:
/// `swp::Plan<Ctx>` (engine) adds typed bodies to one; a pipeline given a plain plan runs its
/// synthetic costs.
///
/// Example, the seed's two-stage training loop:
/// ```
/// swp::PipelinePlan plan;
/// auto copy  = plan.add({"H2D"}, {.stage = 0, .stream = "memcpy", .thread_group = "io"});
/// auto fwd   = plan.add({"Forward"}, {.stage = 1, .thread_group = "compute"});
/// auto bwd   = plan.add({"Backward"}, {.stage = 1, .thread_group = "compute"});
/// auto optim = plan.add({"Optim"}, {.stage = 1, .thread_group = "compute"});
/// plan.intra_iter_deps = {{fwd, copy}, {bwd, fwd}, {optim, bwd}};
/// plan.inter_iter_deps = {{fwd, optim}};  // Forward(i) waits for Optim(i-1)
/// plan.pipeline_depth = 2;
/// ```
struct PipelinePlan {
  std::vector<PlannedTask> tasks;
  std::vector<Dependency> intra_iter_deps;
  std::vector<Dependency> inter_iter_deps;
  /// Declared depth; when set it must equal max(stage) + 1. Unset: inferred.
  std::optional<int> pipeline_depth;
  /// Stream aliases, name -> target: a task whose `schedule.stream` is an alias name runs on
  /// the target stream (the Python original maps stream names to stream objects; several names
  /// may map to one stream). Schedules show the task's own name; the engines queue its device
  /// work on the target, FIFO with every other task resolving to it. Aliases resolve in one
  /// step: a target must be a real stream, not another alias (see `PlanRule::stream_alias`).
  ///
  /// Example: `plan.stream_aliases = {{"emb_lookup", "data_dist"}};`
  std::map<std::string, std::string> stream_aliases;

  /// Appends a task and returns its handle. Names are checked by validation, not here, so a
  /// plan can be assembled in any order and every problem is reported at once.
  TaskHandle add(PipelineTask task, TaskSchedule schedule = {}, SyntheticCost cost = {}) {
    TaskHandle handle{tasks.size(), task.name};
    tasks.push_back(PlannedTask{std::move(task), std::move(schedule), cost});
    return handle;
  }

  /// The stream work named `stream` runs on: the alias target when `stream` is an alias,
  /// else `stream` itself.
  [[nodiscard]] const std::string& device_stream(const std::string& stream) const {
    const auto it = stream_aliases.find(stream);
    return it == stream_aliases.end() ? stream : it->second;
  }
};

}  // namespace swp
