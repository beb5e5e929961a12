#pragma once
// SuccessorLists: every node's successors in one flat array (not for direct use).

#include <cstddef>
#include <span>
#include <vector>

namespace swp::detail {

/// The reverse of per-node dependency lists: for each node, the nodes that depend on it, in
/// the order of their indices (with multiplicity), as pushing back while visiting dependents
/// in index order gives. Built in O(V + E) with two allocations, where a vector per node makes
/// one per node: at 100k nodes those were scattered over the heap, and every walk of a list a
/// cache miss.
class SuccessorLists {
 public:
  SuccessorLists() = default;

  /// `deps(t)`, for each node t in [0, n), ranges over the nodes t depends on (each < n).
  template <class Deps>
  SuccessorLists(std::size_t n, Deps&& deps) : first_(n + 1, 0) {
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t d : deps(t)) ++first_[d + 1];
    for (std::size_t t = 0; t < n; ++t) first_[t + 1] += first_[t];
    nodes_.resize(first_[n]);
    std::vector<std::size_t> end(first_.begin(), first_.end() - 1);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t d : deps(t)) nodes_[end[d]++] = t;
  }

  /// The successors of node `t`; the span stays valid as long as this object (moves included).
  [[nodiscard]] std::span<const std::size_t> operator[](std::size_t t) const noexcept {
    return {nodes_.data() + first_[t], first_[t + 1] - first_[t]};
  }

 private:
  std::vector<std::size_t> first_;  // node t's successors are nodes_[first_[t], first_[t + 1])
  std::vector<std::size_t> nodes_;
};

}  // namespace swp::detail
