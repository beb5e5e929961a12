// detail::EdgeLists: per-node lists from (node, other) pairs, in one flat array.

#include <doctest/doctest.h>

#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include "swp/core/detail/edge_lists.hpp"

namespace test_edge_lists {  // each test file's names apart (unity builds)

using swp::detail::EdgeLists;

std::vector<std::size_t> list_of(const EdgeLists& lists, std::size_t t) {
  return {lists[t].begin(), lists[t].end()};
}

TEST_CASE("EdgeLists holds each node's edges in the order the pairs come, as pushing back does") {
  // Random pairs over 50 nodes, repeats and self-edges included: the flat lists equal a vector
  // per node filled by push_back in the pairs' order.
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    const std::size_t n = 50;
    std::vector<EdgeLists::Edge> edges;
    std::vector<std::vector<std::size_t>> expected(n);
    const int count = static_cast<int>(random() % 300);
    for (int k = 0; k < count; ++k) {
      const std::size_t node = random() % n;
      const std::size_t other = random() % n;
      edges.emplace_back(node, other);
      expected[node].push_back(other);
    }
    const EdgeLists lists(n, edges);
    REQUIRE(lists.size() == n);
    for (std::size_t t = 0; t < n; ++t) CHECK(list_of(lists, t) == expected[t]);
  }
}

TEST_CASE("EdgeLists without edges, without nodes, and moved keep their lists") {
  const EdgeLists none(3, {});
  CHECK(none.size() == 3);
  for (std::size_t t = 0; t < 3; ++t) CHECK(none[t].empty());
  CHECK(EdgeLists().size() == 0);
  CHECK(EdgeLists(0, {}).size() == 0);

  const std::vector<EdgeLists::Edge> edges{{2, 0}, {0, 1}, {2, 1}};
  EdgeLists lists(3, edges);
  const auto* before = lists[2].data();
  const EdgeLists moved(std::move(lists));
  CHECK(moved[2].data() == before);  // spans into it stay valid (TaskInfo keeps them)
  CHECK(list_of(moved, 0) == std::vector<std::size_t>{1});
  CHECK(list_of(moved, 1).empty());
  CHECK(list_of(moved, 2) == std::vector<std::size_t>{0, 1});
}

}  // namespace test_edge_lists
