#pragma once
// Per-period enqueue orders of the clock-driven engine (seed 003, _build_enqueue_order).

#include <string_view>
#include <vector>

#include "swp/core/plan_graph.hpp"

namespace swp {

/// How the tasks of one period are ordered before they go to their lanes.
enum class OrderPolicy {
  /// Topological sort of the period-local graph, ready tasks taken by (stall_cost, name),
  /// the ready list re-sorted after every release: the seed's normative pseudocode.
  ready_first,
  /// Stages from the highest down; within a stage, topological by name over the stage's
  /// intra-iteration edges. Also the row order of the schedule table.
  stage_descending,
};

/// "ready-first" or "stage-descending".
std::string_view policy_name(OrderPolicy policy);

/// Parses a policy name; returns false when `name` is neither.
bool parse_policy(std::string_view name, OrderPolicy& policy);

/// The edges of one period: intra deps between tasks of the same stage, and inter deps whose
/// dependency sits exactly one stage above its dependent (k = 1). Every other dependency was
/// satisfied in an earlier period. An edge crosses streams when the plan's stream names differ
/// (`stream_label`, aliases unresolved), as the seed's `_stream_map` compares them, so the
/// order does not change when a stream alias is added or removed.
struct PeriodLocalGraph {
  std::vector<std::vector<TaskIndex>> successors;  ///< dep -> dependents, with multiplicity
  std::vector<int> in_degree;                      ///< period-local in-edges per task
  std::vector<int> stall_cost;                     ///< cross-stream period-local in-edges
};
PeriodLocalGraph period_local_graph(const PlanGraph& graph);

/// The order in which one period's task instances are enqueued.
/// Throws PlanError (rule intra_cycle) naming the tasks left over when the period-local graph
/// has a cycle, which `validate()` rules out.
/// Example: `for (TaskIndex t : swp::enqueue_order(graph)) std::puts(graph.name(t).c_str());`
std::vector<TaskIndex> enqueue_order(const PlanGraph& graph,
                                     OrderPolicy policy = OrderPolicy::ready_first);

}  // namespace swp
