#include "swp/core/plan_error.hpp"

#include <doctest/doctest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace test_plan_error {  // each test file's names apart (unity builds)

namespace {

const swp::PlanRule all_rules[] = {
    swp::PlanRule::no_tasks,       swp::PlanRule::empty_name,  swp::PlanRule::duplicate_name,
    swp::PlanRule::unknown_task,   swp::PlanRule::negative_stage, swp::PlanRule::intra_cycle,
    swp::PlanRule::corollary_1,    swp::PlanRule::corollary_3, swp::PlanRule::depth_mismatch,
    swp::PlanRule::stream_alias,   swp::PlanRule::stage_limit, swp::PlanRule::cost_limit,
};

}  // namespace

TEST_CASE("every rule has the short name messages print") {
  using swp::PlanRule;
  CHECK(swp::rule_name(PlanRule::no_tasks) == "no tasks");
  CHECK(swp::rule_name(PlanRule::empty_name) == "empty name");
  CHECK(swp::rule_name(PlanRule::duplicate_name) == "duplicate name");
  CHECK(swp::rule_name(PlanRule::unknown_task) == "unknown task");
  CHECK(swp::rule_name(PlanRule::negative_stage) == "negative stage");
  CHECK(swp::rule_name(PlanRule::intra_cycle) == "intra-iteration cycle");
  CHECK(swp::rule_name(PlanRule::corollary_1) == "corollary 1");
  CHECK(swp::rule_name(PlanRule::corollary_3) == "corollary 3");
  CHECK(swp::rule_name(PlanRule::depth_mismatch) == "depth mismatch");
  CHECK(swp::rule_name(PlanRule::stream_alias) == "stream alias");
  CHECK(swp::rule_name(PlanRule::stage_limit) == "stage limit");
  CHECK(swp::rule_name(PlanRule::cost_limit) == "cost limit");

  std::set<std::string_view> distinct;
  for (auto rule : all_rules) distinct.insert(swp::rule_name(rule));
  CHECK(distinct.size() == std::size(all_rules));
}

TEST_CASE("only corollary, depth, stream alias and cost violations are not structural") {
  for (auto rule : all_rules) {
    CAPTURE(swp::rule_name(rule));
    const bool unsafe_only = rule == swp::PlanRule::corollary_1 ||
                             rule == swp::PlanRule::corollary_3 ||
                             rule == swp::PlanRule::depth_mismatch ||
                             rule == swp::PlanRule::stream_alias ||
                             rule == swp::PlanRule::cost_limit;
    CHECK(swp::is_structural(rule) == !unsafe_only);
  }
}

TEST_CASE("a plan error lists every violation, one per line") {
  const swp::PlanError error({
      {swp::PlanRule::duplicate_name, {"A"}, "duplicate name: 'A' twice"},
      {swp::PlanRule::corollary_1, {"B", "C"}, "corollary 1: 'B' depends on 'C'"},
  });
  CHECK(std::string(error.what()) ==
        "invalid plan:\n  duplicate name: 'A' twice\n  corollary 1: 'B' depends on 'C'");
  REQUIRE(error.violations().size() == 2);
  CHECK(error.violations()[1].tasks == std::vector<std::string>{"B", "C"});

  CHECK(error.breaks(swp::PlanRule::duplicate_name));
  CHECK(error.breaks(swp::PlanRule::corollary_1));
  CHECK_FALSE(error.breaks(swp::PlanRule::corollary_3));
  CHECK_FALSE(error.breaks(swp::PlanRule::no_tasks));
}

TEST_CASE("a plan error is caught as a std::runtime_error") {
  auto thrower = [] { throw swp::PlanError({{swp::PlanRule::no_tasks, {}, "no tasks: none"}}); };
  CHECK_THROWS_WITH_AS(thrower(), "invalid plan:\n  no tasks: none", std::runtime_error);
}

}  // namespace test_plan_error
