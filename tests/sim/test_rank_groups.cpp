#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "swp/sim/rank_groups.hpp"

namespace test_rank_groups {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

TEST_CASE("the seed's example: world 8, tp 2, pp 4, rank 4 is stage 2 of pp group 0 2 4 6") {
  const auto g =
      swp::make_rank_groups({.world_size = 8, .tp_size = 2, .pp_size = 4, .dp_size = 1}, 4);
  CHECK(g.pp.ranks == std::vector<int>{0, 2, 4, 6});
  CHECK(g.pp.rank_in_group == 2);
  CHECK(g.tp.ranks == std::vector<int>{4, 5});
  CHECK(g.tp.rank_in_group == 0);
  CHECK(g.dp.ranks == std::vector<int>{4});
  CHECK(g.dp.rank_in_group == 0);
}

TEST_CASE("groups follow the [DP, PP, EP=1, TP] layout") {
  const swp::ParallelConfig c{.world_size = 16, .tp_size = 2, .pp_size = 2, .dp_size = 4};
  // rank 11 = (d 2 · pp 2 + p 1) · tp 2 + t 1
  const auto g = swp::make_rank_groups(c, 11);
  CHECK(g.tp.ranks == std::vector<int>{10, 11});
  CHECK(g.tp.rank_in_group == 1);
  CHECK(g.pp.ranks == std::vector<int>{9, 11});
  CHECK(g.pp.rank_in_group == 1);
  CHECK(g.dp.ranks == std::vector<int>{3, 7, 11, 15});
  CHECK(g.dp.rank_in_group == 2);
  // Every rank is in exactly one group of each kind, and the groups partition the world: each
  // member of a rank's group reports that same group, and the distinct groups of a kind
  // together hold every rank once.
  std::set<std::vector<int>> tp_groups, pp_groups, dp_groups;
  for (int r = 0; r < 16; ++r) {
    const auto gr = swp::make_rank_groups(c, r);
    CHECK(gr.tp.size() * gr.pp.size() * gr.dp.size() == 16);
    CHECK(gr.pp.ranks[static_cast<std::size_t>(gr.pp.rank_in_group)] == r);
    CHECK(gr.tp.ranks[static_cast<std::size_t>(gr.tp.rank_in_group)] == r);
    CHECK(gr.dp.ranks[static_cast<std::size_t>(gr.dp.rank_in_group)] == r);
    for (int member : gr.pp.ranks) CHECK(swp::make_rank_groups(c, member).pp.ranks == gr.pp.ranks);
    for (int member : gr.tp.ranks) CHECK(swp::make_rank_groups(c, member).tp.ranks == gr.tp.ranks);
    for (int member : gr.dp.ranks) CHECK(swp::make_rank_groups(c, member).dp.ranks == gr.dp.ranks);
    tp_groups.insert(gr.tp.ranks);
    pp_groups.insert(gr.pp.ranks);
    dp_groups.insert(gr.dp.ranks);
  }
  for (const auto* kind : {&tp_groups, &pp_groups, &dp_groups}) {
    std::vector<int> all;
    for (const auto& group : *kind) all.insert(all.end(), group.begin(), group.end());
    std::sort(all.begin(), all.end());
    std::vector<int> world(16);
    std::iota(world.begin(), world.end(), 0);
    CHECK(all == world);
  }
  CHECK(tp_groups.size() == 8);
  CHECK(pp_groups.size() == 8);
  CHECK(dp_groups.size() == 4);
}

TEST_CASE("bad rank group arguments are named") {
  CHECK_THROWS_WITH_AS(
      swp::make_rank_groups({.world_size = 8, .tp_size = 2, .pp_size = 2, .dp_size = 1}, 0),
      "world size 8 != tp 2 x pp 2 x dp 1 = 4", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      swp::make_rank_groups({.world_size = 4, .tp_size = 2, .pp_size = 2, .dp_size = 1}, 4),
      "rank 4 is not in 0..3", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      swp::make_rank_groups({.world_size = 4, .tp_size = 0, .pp_size = 2, .dp_size = 1}, 0),
      "tp size 0 must be at least 1", std::invalid_argument);
  // A product past int64 does not wrap round to the world size (it did: 2^21 x 2^21 x 2^22
  // is 2^64, which wrapped to 0; these three wrapped to 26 and printed ranks outside it).
  CHECK_THROWS_WITH_AS(swp::make_rank_groups({.world_size = 26, .tp_size = 252017,
                                              .pp_size = 7571986, .dp_size = 9666741},
                                             5),
                       "world size 26 != tp 252017 x pp 7571986 x dp 9666741 = more than 2^63",
                       std::invalid_argument);
}

}  // namespace test_rank_groups
