#include "swp/core/stage_analysis.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "support/names.hpp"
#include "support/plans.hpp"
#include "support/seed.hpp"
#include "support/text.hpp"
#include "swp/core/plan_json.hpp"

namespace test_stage_analysis {  // each test file's names apart (unity builds)

using swp::OrderPolicy;
using swp::test::contains;
using swp::test::make_plan;

namespace {

// The LDS tasks appear along the order with strictly decreasing stages.
void check_lds_is_decreasing_subsequence(const swp::PlanGraph& graph,
                                         const swp::StageAnalysis& a) {
  std::size_t next = 0;
  int previous_stage = 0;
  for (std::size_t i = 0; i < a.lds_tasks.size(); ++i) {
    const auto t = a.lds_tasks[i];
    while (next < a.order.size() && a.order[next] != t) ++next;
    REQUIRE_MESSAGE(next < a.order.size(), "LDS task out of order: ", graph.name(t));
    ++next;
    if (i > 0) CHECK(graph.stage(t) < previous_stage);
    previous_stage = graph.stage(t);
  }
}

// Longest strictly decreasing subsequence of stages by brute-force dynamic programming.
int lds_by_dp(const swp::PlanGraph& graph, const std::vector<swp::TaskIndex>& order) {
  std::vector<int> best(order.size(), 1);
  int longest = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (graph.stage(order[j]) > graph.stage(order[i])) best[i] = std::max(best[i], best[j] + 1);
    longest = std::max(longest, best[i]);
  }
  return longest;
}

}  // namespace

TEST_CASE("stage-descending on contiguous stages uses every slot: LDS == depth") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto graph = swp::validate(swp::load_plan(swp::test::seed_plan_path(name).string()).plan);
    const auto a = swp::analyze_stages(graph);
    CHECK(a.policy == OrderPolicy::stage_descending);
    CHECK(a.order == swp::enqueue_order(graph, OrderPolicy::stage_descending));
    CHECK(a.depth == graph.depth());
    CHECK(a.lds() == graph.depth());
    CHECK(a.dilworth_optimal());
    check_lds_is_decreasing_subsequence(graph, a);
  }
}

TEST_CASE("the SparseDist analysis names one task per stage, highest first") {
  const auto graph = swp::validate(swp::test::sparse_dist_plan());
  const auto a = swp::analyze_stages(graph, OrderPolicy::stage_descending);
  REQUIRE(a.lds() == 3);
  CHECK(graph.stage(a.lds_tasks[0]) == 2);
  CHECK(graph.stage(a.lds_tasks[1]) == 1);
  CHECK(graph.stage(a.lds_tasks[2]) == 0);
  CHECK(graph.name(a.lds_tasks[2]) == "H2D");
}

TEST_CASE("a stage no task uses costs a slot without overlap: LDS < depth") {
  const auto graph = swp::validate(make_plan({{"Load", 0}, {"Compute", 2}}, {{"Compute", "Load"}}));
  REQUIRE(graph.depth() == 3);
  const auto a = swp::analyze_stages(graph);
  CHECK(a.lds() == 2);
  CHECK(a.depth == 3);
  CHECK_FALSE(a.dilworth_optimal());
  CHECK(a.lds_tasks == std::vector<swp::TaskIndex>{1, 0});

  const auto report = swp::format_stage_analysis(graph, a);
  CHECK(contains(report, "LDS = 2 (example: (2, 0): Compute, Load)\n"));
  CHECK(contains(report, "Pipeline depth = 3\n"));
  CHECK(contains(report, "\u2717 LDS (2) < depth (3)"));
  CHECK_FALSE(contains(report, "\u2713"));
}

TEST_CASE("ready-first submits low stages first, so its LDS is only 1 on SparseDist") {
  const auto graph = swp::validate(swp::test::sparse_dist_plan());
  const auto a = swp::analyze_stages(graph, OrderPolicy::ready_first);
  CHECK(a.policy == OrderPolicy::ready_first);
  CHECK(a.order == swp::enqueue_order(graph, OrderPolicy::ready_first));
  CHECK(a.lds() == 1);
  CHECK_FALSE(a.dilworth_optimal());
  const auto report = swp::format_stage_analysis(graph, a);
  CHECK(contains(report, "(topological order, ready-first)"));
  CHECK(contains(report, "LDS = 1 (example: ("));
  CHECK(contains(report, ",): "));  // a one-element tuple, written the Python way
  CHECK(contains(report, "\u2717 LDS (1) < depth (3)"));
  // Not "memory without overlap": that is the stage-descending order's verdict, given beside
  // it (the clock engine runs SparseDist in ready-first order at its bound).
  CHECK_FALSE(contains(report, "memory without overlap"));
  CHECK(contains(report, "ready-first submits in dependency order"));
  CHECK(contains(report, "stage-descending: LDS = 3, \u2713 every slot overlaps"));
}

TEST_CASE("the LDS is the longest strictly decreasing run of stages, equal stages never chain") {
  std::mt19937 rng(swp::test::seed(7));
  for (int round = 0; round < 200; ++round) {
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    swp::PipelinePlan plan;
    for (int i = 0; i < n; ++i)
      plan.add({swp::test::numbered("T", i)},
               {.stage = std::uniform_int_distribution<int>(0, 4)(rng)});
    const auto graph = swp::validate(plan);
    for (auto policy : {OrderPolicy::ready_first, OrderPolicy::stage_descending}) {
      CAPTURE(round);
      const auto a = swp::analyze_stages(graph, policy);
      CHECK(a.lds() == lds_by_dp(graph, a.order));
      check_lds_is_decreasing_subsequence(graph, a);
    }
  }
}

TEST_CASE("the stage analysis report lists positions, indices, stages and types") {
  const auto graph = swp::validate(swp::test::sparse_dist_plan());
  const auto report = swp::format_stage_analysis(graph, swp::analyze_stages(graph));
  CHECK(report.starts_with("Task schedule (topological order, stage-descending):\n"
                           "Pos  Task            Idx  Stage  Type\n"));
  CHECK(contains(report, "\n0    ZeroGrad        3    2      stream\n"));
  CHECK(contains(report, "\n5    InputDistStart  1    1      ordered\n"));
  CHECK(contains(report, "\n7    H2D             0    0      stream\n"));
  CHECK(contains(report, "LDS = 3 (example: (2, 1, 0): "));
  CHECK(contains(report, "Pipeline depth = 3\n"));
  CHECK(report.ends_with("\u2713 LDS == depth (Dilworth-optimal)\n"));
  CHECK_FALSE(contains(report, "\u2717"));
}

}  // namespace test_stage_analysis
