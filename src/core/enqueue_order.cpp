#include "swp/core/enqueue_order.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string_view>
#include <utility>

#include "concat.hpp"
#include "swp/core/detail/edge_lists.hpp"
#include "swp/core/topological_order.hpp"

namespace swp {

std::string_view policy_name(OrderPolicy policy) {
  return policy == OrderPolicy::ready_first ? "ready-first" : "stage-descending";
}

bool parse_policy(std::string_view name, OrderPolicy& policy) {
  if (name == "ready-first") {
    policy = OrderPolicy::ready_first;
  } else if (name == "stage-descending") {
    policy = OrderPolicy::stage_descending;
  } else {
    return false;
  }
  return true;
}

namespace {

// A period's edges (see PeriodLocalGraph) as (dependency, task) pairs, tasks in index order and
// each task's intra dependencies before its inter ones, in declaration order; and the
// in-degrees and stall costs they give.
struct PeriodEdges {
  std::vector<detail::EdgeLists::Edge> edges;
  std::vector<int> in_degree;
  std::vector<int> stall_cost;
};

PeriodEdges period_edges(const PlanGraph& graph) {
  const std::size_t n = graph.size();
  PeriodEdges local{{}, std::vector<int>(n, 0), std::vector<int>(n, 0)};
  auto add_edge = [&](TaskIndex dep, TaskIndex task) {
    local.edges.emplace_back(dep, task);
    ++local.in_degree[task];
    if (graph.stream_label(dep) != graph.stream_label(task)) ++local.stall_cost[task];
  };
  for (TaskIndex t = 0; t < n; ++t) {
    for (TaskIndex d : graph.intra_deps(t))
      if (graph.stage(d) == graph.stage(t)) add_edge(d, t);
    for (TaskIndex d : graph.inter_deps(t))
      // 64 bits: a graph from inspect() may hold any int stage (validation bounds them).
      if (std::int64_t{graph.stage(d)} == std::int64_t{graph.stage(t)} + 1) add_edge(d, t);
  }
  return local;
}

}  // namespace

PeriodLocalGraph period_local_graph(const PlanGraph& graph) {
  PeriodEdges local = period_edges(graph);
  std::vector<std::vector<TaskIndex>> successors(graph.size());
  for (const auto& [dep, task] : local.edges) successors[dep].push_back(task);
  return {std::move(successors), std::move(local.in_degree), std::move(local.stall_cost)};
}

namespace {

// The period's order by `key` over `nodes` (see topological_order); a cycle is an error that
// names the tasks left over.
template <class Successors, class Key>
std::vector<TaskIndex> ordered(std::span<const TaskIndex> nodes, const Successors& successors,
                               std::vector<int>& in_degree, const PlanGraph& graph, Key key) {
  auto order = topological_order(nodes, successors, in_degree, key);
  if (order.size() != nodes.size()) {
    std::vector<std::string> stuck;
    for (TaskIndex t : nodes)
      if (in_degree[t] > 0) stuck.push_back(graph.name(t));
    std::string listed;
    for (const auto& name : stuck) listed += (listed.empty() ? "'" : ", '") + name + "'";
    throw PlanError({{PlanRule::intra_cycle, stuck,
                      detail::concat("intra-iteration cycle: no enqueue order exists; the "
                                     "period-local graph has a cycle through ",
                                     listed)}});
  }
  return order;
}

// Taking the smallest (stall_cost, name) from a heap is exactly the seed's "pop(0), append
// released, re-sort" loop, because the keys are unique (they end with the task name). The name
// is compared by its rank: the same order, without reading names scattered over the plan.
std::vector<TaskIndex> ready_first(const PlanGraph& graph) {
  PeriodEdges local = period_edges(graph);
  // One flat array, not a vector per task (period_local_graph's lists): the same lists.
  const detail::EdgeLists successors(graph.size(), local.edges);
  std::vector<TaskIndex> all(graph.size());
  for (TaskIndex t = 0; t < all.size(); ++t) all[t] = t;
  return ordered(all, successors, local.in_degree, graph, [&](TaskIndex t) {
    return std::pair<int, std::uint32_t>(local.stall_cost[t], graph.name_rank(t));
  });
}

std::vector<TaskIndex> stage_descending(const PlanGraph& graph) {
  const std::size_t n = graph.size();
  std::map<int, std::vector<TaskIndex>, std::greater<>> by_stage;
  std::vector<detail::EdgeLists::Edge> edges;  // (dependency, task)
  std::vector<int> in_degree(n, 0);
  for (TaskIndex t = 0; t < n; ++t) {
    by_stage[graph.stage(t)].push_back(t);
    for (TaskIndex d : graph.intra_deps(t)) {
      if (graph.stage(d) != graph.stage(t)) continue;
      edges.emplace_back(d, t);
      ++in_degree[t];
    }
  }
  const detail::EdgeLists successors(n, edges);
  std::vector<TaskIndex> order;
  order.reserve(n);
  // Edges stay within a stage, so the stages share one in-degree vector, each sort consuming
  // only its own entries (one copy per stage would cost O(n) per stage).
  for (const auto& [stage, tasks] : by_stage) {
    auto part = ordered(tasks, successors, in_degree, graph,
                        [&](TaskIndex t) { return graph.name_rank(t); });
    order.insert(order.end(), part.begin(), part.end());
  }
  return order;
}

}  // namespace

std::vector<TaskIndex> enqueue_order(const PlanGraph& graph, OrderPolicy policy) {
  return policy == OrderPolicy::ready_first ? ready_first(graph) : stage_descending(graph);
}

}  // namespace swp
