#pragma once
// Stage analysis (seed print_stage_analysis): is the plan's depth what its order needs?

#include <string>
#include <vector>

#include "swp/core/enqueue_order.hpp"
#include "swp/core/plan_graph.hpp"

namespace swp {

/// Result of `analyze_stages`.
///
/// Within one period the engine submits tasks in `order`; task t then works on iteration
/// period − stage(t). A strictly decreasing run of stages along that order is a chain of
/// submissions walking from the oldest in-flight iteration to newer ones. By Dilworth's theorem
/// (for sequences: the longest strictly decreasing subsequence equals the fewest non-decreasing
/// subsequences that cover the sequence) its length `lds` is the number of distinct iterations
/// one period's submission order really interleaves. `lds == depth` means every slot the plan
/// holds is used by that order; `lds < depth` means slots (memory) that buy no overlap, e.g. a
/// stage number no task uses. That reading is the stage-descending order's: ready-first submits
/// in dependency order (lower stages first), so its `lds` is often 1 while every stage still
/// overlaps; format_stage_analysis then gives the stage-descending verdict beside it.
struct StageAnalysis {
  OrderPolicy policy = OrderPolicy::stage_descending;
  std::vector<TaskIndex> order;      ///< the period's order; position = index in this vector
  std::vector<TaskIndex> lds_tasks;  ///< one longest strictly decreasing subsequence
  int depth = 1;                     ///< max(stage) + 1

  [[nodiscard]] int lds() const { return static_cast<int>(lds_tasks.size()); }
  [[nodiscard]] bool dilworth_optimal() const { return lds() == depth; }
};

/// Analyses `graph` under the enqueue order of `policy`.
/// Example: `auto a = swp::analyze_stages(graph); if (!a.dilworth_optimal()) ...`
StageAnalysis analyze_stages(const PlanGraph& graph,
                             OrderPolicy policy = OrderPolicy::stage_descending);

/// The report the seed prints: positions in topological (enqueue) order with each task's
/// declaration index, stage and type (`ordered` for globally ordered tasks, else `stream`),
/// then LDS with an example, the depth and the verdict.
std::string format_stage_analysis(const PlanGraph& graph, const StageAnalysis& analysis);

}  // namespace swp
