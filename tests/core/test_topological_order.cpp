#include "swp/core/topological_order.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/seed.hpp"
#include "swp/core/detail/successor_lists.hpp"

namespace test_topological_order {  // each test file's names apart (unity builds)

namespace {

using Nodes = std::vector<std::size_t>;

// A graph as topological_order takes it: edges d -> t with multiplicity.
struct Graph {
  std::vector<std::vector<std::size_t>> successors;
  std::vector<int> in_degree;

  explicit Graph(std::size_t n) : successors(n), in_degree(n, 0) {}
  void edge(std::size_t from, std::size_t to) {
    successors[from].push_back(to);
    ++in_degree[to];
  }
};

// The order by definition: again and again, of the nodes not placed yet whose predecessors
// are all placed, place the one with the smallest key. Quadratic and plainly right.
template <class Key>
Nodes reference_order(const Nodes& nodes, const Graph& g, Key key) {
  std::vector<std::vector<std::size_t>> preds(g.successors.size());
  for (std::size_t d = 0; d < g.successors.size(); ++d)
    for (std::size_t t : g.successors[d]) preds[t].push_back(d);
  std::vector<bool> placed(g.successors.size(), false);
  Nodes order;
  for (;;) {
    const std::size_t none = g.successors.size();
    std::size_t best = none;
    for (std::size_t t : nodes) {
      if (placed[t]) continue;
      const bool ready = std::ranges::all_of(preds[t], [&](std::size_t d) { return placed[d]; });
      if (ready && (best == none || key(t) < key(best))) best = t;
    }
    if (best == none) return order;
    placed[best] = true;
    order.push_back(best);
  }
}

Nodes iota(std::size_t n) {
  Nodes all(n);
  for (std::size_t t = 0; t < n; ++t) all[t] = t;
  return all;
}

}  // namespace

TEST_SUITE_BEGIN("core topological order");

TEST_CASE("the smallest ready key comes next, as if the ready list were re-sorted every time") {
  // d is ready before b and c are released by a; once a is placed, b ("b") beats d ("d").
  Graph g(4);
  const std::vector<std::string> key{"a", "c", "b", "d"};
  g.edge(0, 1);
  g.edge(0, 2);
  auto degree = g.in_degree;
  const auto order =
      swp::topological_order(iota(4), g.successors, degree, [&](std::size_t t) { return key[t]; });
  CHECK(order == Nodes{0, 2, 1, 3});
  CHECK(degree == std::vector<int>(4, 0));
}

TEST_CASE("on random small DAGs the order is the brute-force one, ties broken by the key") {
  std::mt19937 rng(swp::test::seed(20261123));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 400; ++round) {
    CAPTURE(round);
    const auto n = static_cast<std::size_t>(uniform(1, 12));
    // Unique random names, unrelated to the node numbers and to the hidden order below.
    std::vector<std::string> name(n);
    for (std::size_t t = 0; t < n; ++t) {
      do {
        name[t].clear();
        for (int k = uniform(1, 3); k > 0; --k) name[t] += static_cast<char>('a' + uniform(0, 3));
      } while (std::count(name.begin(), name.end(), name[t]) > 1);
    }
    Nodes hidden = iota(n);
    std::shuffle(hidden.begin(), hidden.end(), rng);
    Graph g(n);
    const double density = std::uniform_real_distribution<double>(0, 0.7)(rng);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) {
          g.edge(hidden[i], hidden[j]);
          if (uniform(0, 9) == 0) g.edge(hidden[i], hidden[j]);  // a duplicated dependency
        }
    auto by_name = [&](std::size_t t) { return name[t]; };
    const auto expected = reference_order(iota(n), g, by_name);
    REQUIRE(expected.size() == n);
    auto degree = g.in_degree;
    CHECK(swp::topological_order(iota(n), g.successors, degree, by_name) == expected);
    CHECK(std::ranges::all_of(degree, [](int d) { return d == 0; }));

    // The nodes listed in key order (the ready ones then come sorted), and the successors as
    // flat lists (detail::SuccessorLists, what the plan's order uses): the same order.
    Nodes listed = iota(n);
    std::ranges::sort(listed, {}, by_name);
    std::vector<std::vector<std::size_t>> preds(n);
    for (std::size_t d = 0; d < n; ++d)
      for (std::size_t t : g.successors[d]) preds[t].push_back(d);
    const swp::detail::SuccessorLists flat(n, [&](std::size_t t) { return preds[t]; });
    degree = g.in_degree;
    CHECK(swp::topological_order(listed, flat, degree, by_name) == expected);
    CHECK(std::ranges::all_of(degree, [](int d) { return d == 0; }));

    // A composite key (a cost first, then the name) is honoured the same way.
    std::vector<int> cost(n);
    for (auto& c : cost) c = uniform(0, 2);
    auto by_cost = [&](std::size_t t) { return std::pair(cost[t], name[t]); };
    degree = g.in_degree;
    CHECK(swp::topological_order(iota(n), g.successors, degree, by_cost) ==
          reference_order(iota(n), g, by_cost));
  }
}

TEST_CASE("only the given nodes are ordered, and only their entries of in_degree change") {
  // Nodes 1, 3, 4 with edges 4 -> 1 -> 3; nodes 0 and 2 belong to another part.
  Graph g(5);
  g.edge(4, 1);
  g.edge(1, 3);
  g.edge(0, 2);
  auto degree = g.in_degree;
  const Nodes part{3, 1, 4};
  CHECK(swp::topological_order(part, g.successors, degree, [](std::size_t t) { return t; }) ==
        Nodes{4, 1, 3});
  CHECK(degree == std::vector<int>{0, 0, 1, 0, 0});
}

TEST_CASE("a cycle leaves out the nodes on it and after it; in_degree names them") {
  // 0 -> 1 -> 2 -> 1 is a cycle through 1 and 2; 4 comes after it; 3 and 0 are free.
  Graph g(5);
  g.edge(0, 1);
  g.edge(1, 2);
  g.edge(2, 1);
  g.edge(2, 4);
  auto degree = g.in_degree;
  const auto order =
      swp::topological_order(iota(5), g.successors, degree, [](std::size_t t) { return -int(t); });
  CHECK(order == Nodes{3, 0});
  CHECK(degree[1] > 0);
  CHECK(degree[2] > 0);
  CHECK(degree[4] > 0);
  CHECK(degree[0] == 0);
  CHECK(degree[3] == 0);

  SUBCASE("a self-loop is a cycle of one") {
    Graph loop(2);
    loop.edge(1, 1);
    auto d = loop.in_degree;
    CHECK(swp::topological_order(iota(2), loop.successors, d, [](std::size_t t) { return t; }) ==
          Nodes{0});
    CHECK(d[1] == 1);
  }
}

TEST_CASE("equal keys are taken by the smaller index") {
  Graph g(4);
  g.edge(3, 0);
  auto degree = g.in_degree;
  CHECK(swp::topological_order(iota(4), g.successors, degree, [](std::size_t) { return 7; }) ==
        Nodes{1, 2, 3, 0});
}

TEST_CASE("flat successor lists list each node's dependents in index order, with multiplicity") {
  // deps: 0 <- {}, 1 <- {0}, 2 <- {0, 0}, 3 <- {2, 1}, 4 <- {}
  const std::vector<Nodes> deps{{}, {0}, {0, 0}, {2, 1}, {}};
  const swp::detail::SuccessorLists succ(deps.size(), [&](std::size_t t) { return deps[t]; });
  auto list = [&](std::size_t t) { return Nodes(succ[t].begin(), succ[t].end()); };
  CHECK(list(0) == Nodes{1, 2, 2});
  CHECK(list(1) == Nodes{3});
  CHECK(list(2) == Nodes{3});
  CHECK(list(3).empty());
  CHECK(list(4).empty());
  const swp::detail::SuccessorLists none(0, [&](std::size_t t) { return deps[t]; });
  const swp::detail::SuccessorLists moved = swp::detail::SuccessorLists(succ);
  CHECK(Nodes(moved[0].begin(), moved[0].end()) == Nodes{1, 2, 2});
}

TEST_CASE("no nodes, no order") {
  Graph g(0);
  CHECK(swp::topological_order(Nodes{}, g.successors, g.in_degree, [](std::size_t t) {
          return t;
        }).empty());
}

TEST_SUITE_END();

}  // namespace test_topological_order
