#pragma once
// EdgeLists: every node's edges in one flat array (not for direct use).

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace swp::detail {

/// Per-node lists of edges (node, other): node t's list holds the `other` of its edges, in the
/// order the edges come. A plan's dependency lists (edges (task, dependency) in declaration
/// order, which the ready-first order relies on), a period's successor lists, SuccessorLists.
/// Built in O(V + E) with two allocations, where a vector per node made one per node with
/// edges: at 100k tasks those were scattered over the heap, and every walk of a list a cache
/// miss.
class EdgeLists {
 public:
  using Edge = std::pair<std::size_t, std::size_t>;  // (node, other), each < n

  EdgeLists() = default;

  /// `n` nodes and their `edges`.
  EdgeLists(std::size_t n, std::span<const Edge> edges)
      : EdgeLists(n, [edges](auto&& add) {
          for (const auto& [node, other] : edges) add(node, other);
        }) {}

  /// `n` nodes; `for_each_edge(add)` calls `add(node, other)` for every edge, in order. It is
  /// called twice (a count, then the fill), so it must give the same edges both times.
  template <class ForEachEdge>
    requires std::is_invocable_v<ForEachEdge&, void (*)(std::size_t, std::size_t)>
  EdgeLists(std::size_t n, ForEachEdge&& for_each_edge) : first_(n + 1, 0) {
    for_each_edge([this](std::size_t node, std::size_t) { ++first_[node + 1]; });
    for (std::size_t t = 0; t < n; ++t) first_[t + 1] += first_[t];
    others_.resize(first_[n]);
    std::vector<std::size_t> end(first_.begin(), first_.end() - 1);
    for_each_edge([&](std::size_t node, std::size_t other) { others_[end[node]++] = other; });
  }

  /// The number of nodes.
  [[nodiscard]] std::size_t size() const noexcept { return first_.empty() ? 0 : first_.size() - 1; }

  /// Node `t`'s list; the span stays valid as long as this object (moves included).
  [[nodiscard]] std::span<const std::size_t> operator[](std::size_t t) const noexcept {
    return {others_.data() + first_[t], first_[t + 1] - first_[t]};
  }

 private:
  std::vector<std::size_t> first_;  // node t's list is others_[first_[t], first_[t + 1])
  std::vector<std::size_t> others_;
};

}  // namespace swp::detail
