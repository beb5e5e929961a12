#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "swp/sim/stage_plan.hpp"

namespace test_stage_plan {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

namespace {

std::vector<std::pair<int, int>> ranges(const swp::StagePlan& plan) {
  std::vector<std::pair<int, int>> out;
  for (const auto& s : plan.stages()) out.emplace_back(s.start_layer, s.end_layer);
  return out;
}

}  // namespace

TEST_CASE("a uniform partition gives earlier stages the ceil count") {
  SUBCASE("even split") {
    const auto plan = swp::StagePlan::uniform(8, 4);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 2}, {2, 4}, {4, 6}, {6, 8}});
  }
  SUBCASE("uneven split: ceil(10 / 4) = 3, the last stage clamped") {
    const auto plan = swp::StagePlan::uniform(10, 4);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 3}, {3, 6}, {6, 9}, {9, 10}});
    CHECK(plan.stage(3).layer_count() == 1);
  }
  SUBCASE("more stages than layers: trailing stages are empty") {
    const auto plan = swp::StagePlan::uniform(3, 5);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 3}, {3, 3}});
    CHECK(plan.stage(4).layer_count() == 0);
  }
  SUBCASE("uneven with a shortened middle: ceil(9 / 4) = 3 leaves stage 3 empty") {
    const auto plan = swp::StagePlan::uniform(9, 4);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 3}, {3, 6}, {6, 9}, {9, 9}});
  }
  SUBCASE("one stage owns everything") {
    const auto plan = swp::StagePlan::uniform(7, 1);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 7}});
    CHECK_FALSE(plan.stage(0).enabled());
  }
  SUBCASE("no layers") {
    const auto plan = swp::StagePlan::uniform(0, 2);
    CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 0}, {0, 0}});
  }
}

TEST_CASE("stage roles: embedding on the first stage, norm and lm_head on the last") {
  const auto plan = swp::StagePlan::uniform(12, 3);
  const auto& first = plan.stage(0);
  const auto& middle = plan.stage(1);
  const auto& last = plan.stage(2);
  CHECK(first.enabled());
  CHECK((first.is_first() && !first.is_last()));
  CHECK((!middle.is_first() && !middle.is_last()));
  CHECK((last.is_last() && !last.is_first()));
  CHECK((first.has_embedding() && !first.has_final_norm() && !first.has_lm_head()));
  CHECK((!middle.has_embedding() && !middle.has_final_norm() && !middle.has_lm_head()));
  CHECK((!last.has_embedding() && last.has_final_norm() && last.has_lm_head()));
  CHECK(middle.owns_layer(4));
  CHECK(middle.owns_layer(7));
  CHECK_FALSE(middle.owns_layer(8));
  CHECK_FALSE(middle.owns_layer(3));
  CHECK(plan.stage_of_layer(8).stage_id == 2);
  const auto single = swp::StagePlan::uniform(4, 1).stage(0);
  CHECK((single.has_embedding() && single.has_lm_head()));
}

TEST_CASE("an explicit partition takes the layer counts as given") {
  const auto plan = swp::StagePlan::from_layer_counts({2, 5, 0, 3});
  CHECK(plan.total_layers() == 10);
  CHECK(ranges(plan) == std::vector<std::pair<int, int>>{{0, 2}, {2, 7}, {7, 7}, {7, 10}});
  CHECK_THROWS_WITH_AS(swp::StagePlan::from_layer_counts({2, -1}),
                       "stage 1 has a negative layer count (-1)", std::invalid_argument);
  CHECK_THROWS_AS(swp::StagePlan::from_layer_counts({}), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::StagePlan::from_layer_counts(std::vector<int>(1001, 1'000'000)),
                       "too many layers in the stage plan: 1001000000 (at most 1000000000)",
                       std::invalid_argument);
}

TEST_CASE("a uniform partition of INT_MAX layers stays in range") {
  // L + S - 1 used to wrap int: the ranges came out negative.
  const auto plan = swp::StagePlan::uniform(2147483647, 2);
  CHECK(plan.stage(0).start_layer == 0);
  CHECK(plan.stage(0).end_layer == 1073741824);
  CHECK(plan.stage(1).start_layer == 1073741824);
  CHECK(plan.stage(1).end_layer == 2147483647);
}

TEST_CASE("bad partition arguments are named") {
  CHECK_THROWS_WITH_AS(swp::StagePlan::uniform(4, 0), "stage count 0 must be at least 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::StagePlan::uniform(-2, 2), "layer count -2 is negative",
                       std::invalid_argument);
  const auto plan = swp::StagePlan::uniform(4, 2);
  CHECK_THROWS_WITH_AS((void)plan.stage(2), "stage 2 is not in 0..1", std::out_of_range);
  CHECK_THROWS_WITH_AS((void)plan.stage_of_layer(4), "layer 4 is not in 0..3", std::out_of_range);
}

}  // namespace test_stage_plan
