#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "support/plans.hpp"
#include "swp/tune/profiled_costs.hpp"

namespace test_profiled_costs {  // each test file's names apart (unity builds)

namespace {

swp::ProfileResult measured(std::initializer_list<std::pair<const char*, double>> exposed_us) {
  swp::ProfileResult r;
  for (const auto& [task, us] : exposed_us) r.tasks.push_back({task, us * 1e-6, 0});
  return r;
}

const swp::SyntheticCost& cost_of(const swp::PipelinePlan& plan, const std::string& name) {
  for (const auto& t : plan.tasks)
    if (t.task.name == name) return t.cost;
  throw std::out_of_range(name);
}

// A (cpu 10, device 30), B (cpu 20), C (no cost), D (device 40, every 4th 80), E (cpu 5).
swp::PipelinePlan costed_plan() {
  auto plan =
      swp::test::make_plan({{"A", 0, "s"}, {"B", 0}, {"C", 0, "t"}, {"D", 0}, {"E", 0}}, {});
  plan.tasks[0].cost = {.cpu_us = 10, .device_us = 30};
  plan.tasks[1].cost = {.cpu_us = 20};
  plan.tasks[3].cost = {.device_us = 40, .jitter_every = 4, .jitter_device_us = 80};
  plan.tasks[4].cost = {.cpu_us = 5};
  return plan;
}

}  // namespace

TEST_SUITE_BEGIN("engine profiled costs");

TEST_CASE("with_profiled_costs scales the plan's split to the exposed time") {
  const auto plan = costed_plan();
  const auto costed =
      swp::with_profiled_costs(plan, measured({{"A", 20}, {"B", 50}, {"C", 7}, {"D", 25}}));
  // A: 40 planned -> 20 measured, the 1:3 split kept.
  CHECK(cost_of(costed, "A").cpu_us == doctest::Approx(5));
  CHECK(cost_of(costed, "A").device_us == doctest::Approx(15));
  CHECK(cost_of(costed, "B").cpu_us == doctest::Approx(50));
  CHECK(cost_of(costed, "B").device_us == 0);
  // C had no cost: by default the measured time is device time on its stream.
  CHECK(cost_of(costed, "C").device_us == doctest::Approx(7));
  CHECK(cost_of(costed, "C").cpu_us == 0);
  // D: mean device (3 × 40 + 80) / 4 = 50 -> 25: both device times halve, jitter kept.
  CHECK(cost_of(costed, "D").device_us == doctest::Approx(20));
  CHECK(cost_of(costed, "D").jitter_device_us == doctest::Approx(40));
  CHECK(cost_of(costed, "D").jitter_every == 4);
  CHECK(cost_of(costed, "D").mean_device_us() == doctest::Approx(25));
  // E was not profiled: unchanged. So is everything but the costs.
  CHECK(cost_of(costed, "E") == swp::SyntheticCost{.cpu_us = 5});
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    CHECK(costed.tasks[t].task.name == plan.tasks[t].task.name);
    CHECK(costed.tasks[t].schedule.stream == plan.tasks[t].schedule.stream);
  }
}

TEST_CASE("with_profiled_costs puts a costless task's time on its lane when asked") {
  const auto costed =
      swp::with_profiled_costs(costed_plan(), measured({{"C", 7}}), swp::MeasuredTimeOn::cpu);
  CHECK(cost_of(costed, "C").cpu_us == doctest::Approx(7));
  CHECK(cost_of(costed, "C").device_us == 0);
  const auto zero = swp::with_profiled_costs(costed_plan(), measured({{"A", 0}}));
  CHECK(cost_of(zero, "A") == swp::SyntheticCost{});
}

TEST_CASE("with_profiled_costs rejects a profile of another plan, naming the tasks") {
  const auto plan = costed_plan();
  CHECK_THROWS_WITH_AS(swp::with_profiled_costs(plan, measured({{"A", 1}, {"X", 1}, {"Y", 2}})),
                       "the profile names task(s) the plan does not have: 'X', 'Y'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::with_profiled_costs(plan, measured({{"A", 1}, {"A", 2}})),
                       "the profile measures task 'A' twice", std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::with_profiled_costs(plan, measured({{"B", -1}})),
                       doctest::Contains("'B'"), std::invalid_argument);
  CHECK_THROWS_AS(
      swp::with_profiled_costs(plan, measured({{"B", std::numeric_limits<double>::infinity()}})),
      std::invalid_argument);
  // A time that scales a cost past the plan's limit (1e9 us) is the profile's error, by task:
  // it used to surface from the costed plan's validation as an invalid plan. D's jitter (80
  // every 4th against a mean of 50) passes the limit before its mean does.
  CHECK_THROWS_WITH_AS(swp::with_profiled_costs(plan, measured({{"B", 2e9}})),
                       "profiled task 'B': an exposed time of 2e+09 us scales its cost to 2e+09 "
                       "us, past the limit of 1e+09 us per task",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::with_profiled_costs(plan, measured({{"D", 1e9}})),
                       doctest::Contains("profiled task 'D': an exposed time of 1e+09 us scales "
                                         "its cost to 1.6e+09 us"),
                       std::invalid_argument);
  CHECK_NOTHROW(swp::with_profiled_costs(plan, measured({{"B", 1e9}})));
}

TEST_SUITE_END();

}  // namespace test_profiled_costs
