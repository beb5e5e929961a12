#pragma once
// Kahn's algorithm with a priority: the one topological sort behind every order of a plan
// (the intra-dependency order of PlanGraph::topological_order and the enqueue orders).

#include <cstddef>
#include <functional>
#include <queue>
#include <span>
#include <utility>
#include <vector>

namespace swp {

/// Topological order of `nodes` that always takes, among the nodes whose in-edges are all
/// released, the one with the smallest `key(node)`. Keys are compared with `<`; make them
/// unique among `nodes` (end them with a name or the index) and the order is fully determined:
/// it is exactly the order of "pop the smallest ready node, append the nodes it releases,
/// re-sort the ready list", in O((V + E) log V) key comparisons instead of a sort per pop.
///
/// `successors[d]` lists the nodes with an edge from `d`, with multiplicity; `in_degree[t]`
/// counts the edges into `t` from `nodes`. Both are indexed by node, so their size exceeds
/// every node; edges must stay within `nodes`. `in_degree` is consumed: on return it is zero
/// exactly for the nodes returned.
///
/// Returns every node of `nodes` when their edges have no cycle; otherwise the nodes neither
/// on a cycle nor reachable from one (the caller names the others from `in_degree`).
/// Example: `auto order = swp::topological_order(all, succ, indegree, [&](TaskIndex t) {
///   return std::pair(std::string_view(graph.name(t)), t); });`
template <class Key>
std::vector<std::size_t> topological_order(std::span<const std::size_t> nodes,
                                           const std::vector<std::vector<std::size_t>>& successors,
                                           std::vector<int>& in_degree, Key&& key) {
  using Entry = std::pair<std::invoke_result_t<Key&, std::size_t>, std::size_t>;
  // A min-heap on (key, node): with unique keys the node never decides, and with equal keys
  // (an inspected plan with duplicate names) the smaller index comes first.
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (std::size_t t : nodes)
    if (in_degree[t] == 0) ready.emplace(key(t), t);
  std::vector<std::size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const std::size_t t = ready.top().second;
    ready.pop();
    order.push_back(t);
    for (std::size_t s : successors[t])
      if (--in_degree[s] == 0) ready.emplace(key(s), s);
  }
  return order;
}

}  // namespace swp
