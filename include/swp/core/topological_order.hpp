#pragma once
// Kahn's algorithm with a priority: the one topological sort behind every order of a plan
// (the intra-dependency order of PlanGraph::topological_order and the enqueue orders).

#include <algorithm>
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
/// `successors[d]` lists the nodes with an edge from `d`, with multiplicity (a
/// `std::vector<std::vector<std::size_t>>`, or anything indexable to a range of nodes);
/// `in_degree[t]` counts the edges into `t` from `nodes`. Both are indexed by node, so their
/// size exceeds every node; edges must stay within `nodes`. `in_degree` is consumed: on return
/// it is zero exactly for the nodes returned.
///
/// Returns every node of `nodes` when their edges have no cycle; otherwise the nodes neither
/// on a cycle nor reachable from one (the caller names the others from `in_degree`).
/// Example: `auto order = swp::topological_order(all, succ, indegree, [&](TaskIndex t) {
///   return std::pair(std::string_view(graph.name(t)), t); });`
template <class Successors, class Key>
std::vector<std::size_t> topological_order(std::span<const std::size_t> nodes,
                                           const Successors& successors,
                                           std::vector<int>& in_degree, Key&& key) {
  using Entry = std::pair<std::invoke_result_t<Key&, std::size_t>, std::size_t>;
  // The nodes ready from the start, sorted, and a min-heap on (key, node) of those released
  // later: the next node is the smaller of their fronts, which is the smallest ready node, so
  // the order is the one a single heap of all ready nodes gives, with one sort instead of a
  // heap operation per node where most nodes are ready at once (a plan of independent tasks;
  // nodes listed in key order need no sort).
  // With unique keys the node never decides; with equal keys (an inspected plan with duplicate
  // names) the smaller index comes first.
  std::vector<Entry> initial;
  for (std::size_t t : nodes)
    if (in_degree[t] == 0) initial.emplace_back(key(t), t);
  if (!std::is_sorted(initial.begin(), initial.end())) std::sort(initial.begin(), initial.end());
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> released;
  std::vector<std::size_t> order;
  order.reserve(nodes.size());
  std::size_t next = 0;
  while (next < initial.size() || !released.empty()) {
    std::size_t t;
    if (released.empty() || (next < initial.size() && initial[next] < released.top())) {
      t = initial[next++].second;
    } else {
      t = released.top().second;
      released.pop();
    }
    order.push_back(t);
    for (std::size_t s : successors[t])
      if (--in_degree[s] == 0) released.emplace(key(s), s);
  }
  return order;
}

}  // namespace swp
