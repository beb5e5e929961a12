#pragma once
// EdgeLists: every node's edges in one flat array (not for direct use).

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace swp::detail {

/// Per-node lists built from (node, other) pairs: node t's list holds the `other` of its
/// pairs, in the order the pairs come. A plan's dependency lists (pairs (task, dependency) in
/// declaration order, which the ready-first order relies on) and a period's successor lists
/// (pairs (dependency, task)). Built in O(V + E) with two allocations, where a vector per node
/// made one per node with edges: at 100k tasks those were scattered over the heap. (See
/// SuccessorLists for the reverse of per-node lists.)
class EdgeLists {
 public:
  using Edge = std::pair<std::size_t, std::size_t>;  // (node, other), each < n

  EdgeLists() = default;

  /// `n` nodes and their `edges`.
  EdgeLists(std::size_t n, std::span<const Edge> edges) : first_(n + 1, 0) {
    for (const auto& edge : edges) ++first_[edge.first + 1];
    for (std::size_t t = 0; t < n; ++t) first_[t + 1] += first_[t];
    others_.resize(edges.size());
    std::vector<std::size_t> end(first_.begin(), first_.end() - 1);
    for (const auto& [node, other] : edges) others_[end[node]++] = other;
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
