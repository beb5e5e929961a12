#pragma once
// The stage rules of a plan (seed 003's corollaries 1 and 3), stated once: validation reports
// their violations, the tuner keeps them while it moves tasks between stages.

#include <cstdint>

#include "swp/core/plan_error.hpp"
#include "swp/core/plan_graph.hpp"

namespace swp {

/// Corollary 1: within an iteration a task may depend on a task of its own stage or an earlier
/// one (dep.stage ≤ task.stage); a later one runs in a future period, so the task deadlocks.
[[nodiscard]] constexpr bool intra_dep_stages_ok(int task_stage, int dep_stage) noexcept {
  return dep_stage <= task_stage;
}

/// Corollary 3: a task of iteration i may depend on a task of iteration i − 1 at most one
/// stage above it (dep.stage − task.stage ≤ 1); higher, dep(i − 1) would run in a future
/// period: structural deadlock. Computed in 64 bits, so no pair of stages overflows.
[[nodiscard]] constexpr bool inter_dep_stages_ok(int task_stage, int dep_stage) noexcept {
  return std::int64_t{dep_stage} - std::int64_t{task_stage} <= 1;
}

/// Checks corollaries 1 and 3 on every dependency of `graph`, with the stages `stage_of(t)`
/// (the plan's, or a candidate assignment's), and calls `broken(rule, task, dep)` for each
/// dependency that breaks one: by task, its intra dependencies before its inter ones, each list
/// in declaration order. `broken` returns true to go on, false to stop at once.
/// Returns true when no rule is broken. O(V + E).
/// Example: `bool ok = swp::check_stage_rules(graph, [&](TaskIndex t) { return stages[t]; },
///   [](PlanRule, TaskIndex, TaskIndex) { return false; });`
template <class StageOf, class Broken>
bool check_stage_rules(const PlanGraph& graph, StageOf&& stage_of, Broken&& broken) {
  bool holds = true;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    for (TaskIndex d : graph.intra_deps(t)) {
      if (intra_dep_stages_ok(stage_of(t), stage_of(d))) continue;
      holds = false;
      if (!broken(PlanRule::corollary_1, t, d)) return false;
    }
    for (TaskIndex d : graph.inter_deps(t)) {
      if (inter_dep_stages_ok(stage_of(t), stage_of(d))) continue;
      holds = false;
      if (!broken(PlanRule::corollary_3, t, d)) return false;
    }
  }
  return holds;
}

}  // namespace swp
