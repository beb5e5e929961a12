#pragma once
// SuccessorLists: every node's successors in one flat array (not for direct use).

#include <cstddef>

#include "swp/core/detail/edge_lists.hpp"

namespace swp::detail {

/// The reverse of per-node dependency lists: for each node, the nodes that depend on it, in
/// the order of their indices (with multiplicity), as pushing back while visiting dependents
/// in index order gives. EdgeLists of the edges (dependency, dependent), built in O(V + E)
/// with two allocations.
class SuccessorLists : public EdgeLists {
 public:
  SuccessorLists() = default;

  /// `deps(t)`, for each node t in [0, n), ranges over the nodes t depends on (each < n).
  template <class Deps>
  SuccessorLists(std::size_t n, Deps&& deps)
      : EdgeLists(n, [n, &deps](auto&& add) {
          for (std::size_t t = 0; t < n; ++t)
            for (std::size_t d : deps(t)) add(d, t);
        }) {}
};

}  // namespace swp::detail
