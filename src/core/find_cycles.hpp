#pragma once
// Cycle search over a dependency graph (private to src/core).

#include <cstddef>
#include <vector>

#include "swp/core/detail/edge_lists.hpp"

namespace swp::detail {

/// Returns one cycle for every strongly connected component that has one (a self-loop counts),
/// each as the list of nodes t0, t1, ..., tk where every node depends on the next and tk
/// depends on t0. `deps[t]` lists the nodes `t` depends on. Cycles start at their smallest
/// node and are ordered by it, so the result is deterministic.
std::vector<std::vector<std::size_t>> find_cycles(const EdgeLists& deps);

}  // namespace swp::detail
