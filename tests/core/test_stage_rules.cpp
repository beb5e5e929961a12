#include "swp/core/stage_rules.hpp"

#include <doctest/doctest.h>

#include <climits>
#include <random>
#include <tuple>
#include <vector>

#include "support/plans.hpp"
#include "support/random_plans.hpp"
#include "support/seed.hpp"

namespace test_stage_rules {  // each test file's names apart (unity builds)

using swp::PlanRule;
using swp::TaskIndex;
using swp::test::make_plan;

namespace {

using Broken = std::tuple<PlanRule, TaskIndex, TaskIndex>;

// Every (rule, task, dep) that check_stage_rules reports for `stages`, in its order.
std::vector<Broken> broken_rules(const swp::PlanGraph& graph, const std::vector<int>& stages,
                                 bool& holds) {
  std::vector<Broken> out;
  holds = swp::check_stage_rules(
      graph, [&](TaskIndex t) { return stages[t]; },
      [&](PlanRule rule, TaskIndex t, TaskIndex d) {
        out.emplace_back(rule, t, d);
        return true;
      });
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("core stage rules");

TEST_CASE("corollary 1: an intra dependency may sit at the task's stage or earlier") {
  CHECK(swp::intra_dep_stages_ok(2, 2));
  CHECK(swp::intra_dep_stages_ok(2, 0));
  CHECK_FALSE(swp::intra_dep_stages_ok(2, 3));
  CHECK_FALSE(swp::intra_dep_stages_ok(0, 1));
  static_assert(swp::intra_dep_stages_ok(1, 1));
}

TEST_CASE("corollary 3: an inter dependency may sit at most one stage above the task") {
  CHECK(swp::inter_dep_stages_ok(0, 1));
  CHECK(swp::inter_dep_stages_ok(1, 1));
  CHECK(swp::inter_dep_stages_ok(3, 0));
  CHECK_FALSE(swp::inter_dep_stages_ok(0, 2));
  CHECK_FALSE(swp::inter_dep_stages_ok(1, 5));
  static_assert(swp::inter_dep_stages_ok(4, 5));

  SUBCASE("the difference cannot overflow") {
    CHECK_FALSE(swp::inter_dep_stages_ok(INT_MIN, INT_MAX));
    CHECK_FALSE(swp::inter_dep_stages_ok(-1, INT_MAX));
    CHECK(swp::inter_dep_stages_ok(INT_MAX, INT_MIN));
    CHECK(swp::inter_dep_stages_ok(INT_MAX - 1, INT_MAX));
  }
}

TEST_CASE("check_stage_rules reports each broken dependency: by task, intra before inter") {
  // Indices: A 0, B 1, C 2, D 3.
  const auto inspection = swp::inspect(make_plan({{"A", 0}, {"B", 0}, {"C", 2}, {"D", 1}},
                                                 {{"A", "D"}, {"B", "C"}, {"B", "A"}},
                                                 {{"A", "C"}, {"B", "C"}, {"D", "C"}}));
  const auto& graph = inspection.graph;
  const std::vector<int> plan_stages{0, 0, 2, 1};
  bool holds = true;
  CHECK(broken_rules(graph, plan_stages, holds) ==
        std::vector<Broken>{{PlanRule::corollary_1, 0, 3},
                            {PlanRule::corollary_3, 0, 2},
                            {PlanRule::corollary_1, 1, 2},
                            {PlanRule::corollary_3, 1, 2}});
  CHECK_FALSE(holds);

  SUBCASE("the stages checked are the ones given, not the plan's") {
    CHECK(broken_rules(graph, {2, 2, 2, 2}, holds).empty());
    CHECK(holds);
    CHECK(broken_rules(graph, {1, 1, 0, 0}, holds).empty());
    CHECK(holds);
  }
  SUBCASE("returning false stops at the first broken rule") {
    int calls = 0;
    CHECK_FALSE(swp::check_stage_rules(
        graph, [&](TaskIndex t) { return plan_stages[t]; },
        [&](PlanRule, TaskIndex, TaskIndex) {
          ++calls;
          return false;
        }));
    CHECK(calls == 1);
  }
}

TEST_CASE("check_stage_rules agrees with the corollaries spelt out on random stages") {
  std::mt19937 rng(swp::test::seed(7));
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    const auto plan = swp::test::random_plan(rng);
    const auto inspection = swp::inspect(plan);
    const auto& graph = inspection.graph;
    std::vector<int> stages(graph.size());
    for (int& s : stages) s = std::uniform_int_distribution<int>(0, 4)(rng);

    std::vector<Broken> expected;
    for (TaskIndex t = 0; t < graph.size(); ++t) {
      for (TaskIndex d : graph.intra_deps(t))
        if (stages[d] > stages[t]) expected.emplace_back(PlanRule::corollary_1, t, d);
      for (TaskIndex d : graph.inter_deps(t))
        if (stages[d] - stages[t] > 1) expected.emplace_back(PlanRule::corollary_3, t, d);
    }
    bool holds = false;
    CHECK(broken_rules(graph, stages, holds) == expected);
    CHECK(holds == expected.empty());
  }
}

TEST_SUITE_END();

}  // namespace test_stage_rules
