#include "swp/core/stage_analysis.hpp"

#include <algorithm>

#include "concat.hpp"

namespace swp {

namespace {

// Longest strictly decreasing subsequence of stages along `order` (patience sorting on
// negated stages, O(n log n)), returned as the tasks that form it.
std::vector<TaskIndex> longest_decreasing(const PlanGraph& graph,
                                          const std::vector<TaskIndex>& order) {
  std::vector<std::size_t> tails;              // position in `order` ending each pile
  std::vector<std::size_t> prev(order.size());  // back-pointers into `order`
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int stage = graph.stage(order[i]);
    // First pile whose tail stage is <= stage: a strictly decreasing run cannot extend it.
    auto it = std::ranges::lower_bound(tails, stage, std::greater<>{},
                                       [&](std::size_t pos) { return graph.stage(order[pos]); });
    const auto pile = static_cast<std::size_t>(it - tails.begin());
    prev[i] = pile == 0 ? none : tails[pile - 1];
    if (it == tails.end()) {
      tails.push_back(i);
    } else {
      *it = i;
    }
  }
  std::vector<TaskIndex> run;
  for (std::size_t pos = tails.empty() ? none : tails.back(); pos != none; pos = prev[pos])
    run.push_back(order[pos]);
  std::ranges::reverse(run);
  return run;
}

}  // namespace

StageAnalysis analyze_stages(const PlanGraph& graph, OrderPolicy policy) {
  StageAnalysis analysis;
  analysis.policy = policy;
  analysis.order = enqueue_order(graph, policy);
  analysis.lds_tasks = longest_decreasing(graph, analysis.order);
  analysis.depth = graph.depth();
  return analysis;
}

std::string format_stage_analysis(const PlanGraph& graph, const StageAnalysis& analysis) {
  std::size_t w_task = 4;
  for (TaskIndex t : analysis.order) w_task = std::max(w_task, graph.name(t).size());
  auto pad = [](std::string text, std::size_t width) {
    text.resize(std::max(width, text.size()), ' ');
    return text;
  };

  std::string out = detail::concat("Task schedule (topological order, ", policy_name(analysis.policy),
                                   "):\n");
  out += pad("Pos", 5) + pad("Task", w_task + 2) + pad("Idx", 5) + pad("Stage", 7) + "Type\n";
  out += std::string(5 + w_task + 2 + 5 + 7 + 7, '-') + '\n';
  for (std::size_t pos = 0; pos < analysis.order.size(); ++pos) {
    const TaskIndex t = analysis.order[pos];
    out += pad(std::to_string(pos), 5) + pad(graph.name(t), w_task + 2) +
           pad(std::to_string(t), 5) + pad(std::to_string(graph.stage(t)), 7) +
           (graph.schedule(t).globally_ordered ? "ordered" : "stream") + '\n';
  }

  std::string stages, tasks;
  for (TaskIndex t : analysis.lds_tasks) {
    stages += (stages.empty() ? "" : ", ") + std::to_string(graph.stage(t));
    tasks += (tasks.empty() ? "" : ", ") + graph.name(t);
  }
  if (analysis.lds_tasks.size() == 1) stages += ",";
  out += detail::concat("LDS = ", analysis.lds(), " (example: (", stages, "): ", tasks, ")\n");
  out += detail::concat("Pipeline depth = ", analysis.depth, '\n');
  if (analysis.dilworth_optimal()) {
    out += "\u2713 LDS == depth (Dilworth-optimal)\n";
  } else if (analysis.policy == OrderPolicy::stage_descending) {
    out += detail::concat("\u2717 LDS (", analysis.lds(), ") < depth (", analysis.depth,
                          "): this order interleaves only ", analysis.lds(),
                          " iteration(s) per period; the other slots hold memory without overlap\n");
  } else {
    // Another order's LDS is no count of the iterations a period overlaps (ready-first submits
    // in dependency order, lower stages first, and the engine still overlaps every stage):
    // the slots' check is the stage-descending order's, given beside it.
    const StageAnalysis descending = analyze_stages(graph, OrderPolicy::stage_descending);
    out += detail::concat("\u2717 LDS (", analysis.lds(), ") < depth (", analysis.depth, "): ",
                          policy_name(analysis.policy),
                          " submits in dependency order, not oldest iteration first, so this LDS "
                          "does not count the iterations a period overlaps\n");
    out += detail::concat("stage-descending: LDS = ", descending.lds(), ", ",
                          descending.dilworth_optimal()
                              ? std::string("\u2713 every slot overlaps (Dilworth-optimal)")
                              : detail::concat("\u2717 only ", descending.lds(),
                                               " iteration(s) per period; the other slots hold "
                                               "memory without overlap"),
                          '\n');
  }
  return out;
}

}  // namespace swp
