#include <doctest/doctest.h>

#include <random>
#include <stdexcept>
#include <string>

#include "support/alloc_counter.hpp"
#include "support/names.hpp"
#include "support/plans.hpp"
#include "support/seed.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/device/nvtx_ranges.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace test_synthetic_run {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("tune");

namespace {

// A random valid plan: 1..6 tasks on 1..3 streams and lanes, stages 0..3, intra deps towards
// earlier tasks on no later stage, an inter dep now and then, costs with and without jitter.
swp::PipelinePlan random_plan(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  swp::PipelinePlan plan;
  const int n = pick(1, 6);
  for (int t = 0; t < n; ++t) {
    swp::SyntheticCost cost;
    cost.cpu_us = pick(0, 3) == 0 ? 0 : pick(1, 400) / 4.0;
    cost.device_us = pick(0, 3) == 0 ? 0 : pick(1, 2000) / 4.0;
    if (pick(0, 3) == 0) {
      cost.jitter_every = pick(1, 9);
      cost.jitter_device_us = pick(0, 8000) / 4.0;
    }
    plan.add(swp::test::numbered("T", t),
             {.stage = pick(0, 3),
              .stream = swp::test::numbered("s", pick(0, 2)),
              .thread_group = swp::test::numbered("l", pick(0, 2))},
             cost);
  }
  for (int t = 1; t < n; ++t) {
    const int d = pick(0, t - 1);
    if (pick(0, 1) == 0 && plan.tasks[d].schedule.stage <= plan.tasks[t].schedule.stage)
      plan.intra_iter_deps.push_back({swp::test::numbered("T", t), swp::test::numbered("T", d)});
    const int e = pick(0, n - 1);
    if (pick(0, 3) == 0 && plan.tasks[e].schedule.stage - plan.tasks[t].schedule.stage <= 1)
      plan.inter_iter_deps.push_back({swp::test::numbered("T", t), swp::test::numbered("T", e)});
  }
  return plan;
}

}  // namespace

TEST_CASE("on sim the measured time per iteration is never below the bound, nor negative") {
  // Efficiency = bound / measured is at most 1 on sim by definition: the busiest stream or
  // lane cannot do an iteration's work in less time than that work takes. Short runs, jitter
  // and unsaturated plans once made the measurement report up to 33x the bound.
  std::mt19937 rng(swp::test::seed(20240613));
  for (int round = 0; round < 150; ++round) {
    const auto plan = random_plan(rng);
    for (const auto engine : {swp::EngineKind::clock, swp::EngineKind::data_flow}) {
      const int iters = std::uniform_int_distribution<int>(1, 40)(rng);
      CAPTURE(swp::plan_to_json(plan));
      CAPTURE(swp::engine_name(engine));
      CAPTURE(iters);
      swp::SyntheticRunOptions options{
          .engine = engine, .iters = iters, .runtime = {.backend = swp::Backend::sim}};
      const auto result = swp::run_synthetic(plan, options);
      CHECK_FALSE(result.us_per_iter < 0);
      CHECK_FALSE(result.efficiency > 1);
      CHECK_FALSE(result.efficiency < 0);
      if (result.bound_us_per_iter > 0) CHECK(result.us_per_iter > 0);
      CHECK(result.us_per_iter >= result.bound_us_per_iter);
      CHECK(result.steady_state == (iters >= swp::min_steady_iters(result.slots)));
    }
  }
}

TEST_CASE(
    "the steady state is measured from 2 x slots + 2 iterations on, fill and drain left out") {
  // Three 1000 us stages on three streams: the bound is 1000 us; the clock engine has 3 slots.
  const auto plan = swp::parse_plan(R"({"tasks": [
      {"name": "A", "stage": 0, "stream": "a", "device_us": 1000},
      {"name": "B", "stage": 1, "stream": "b", "device_us": 1000},
      {"name": "C", "stage": 2, "stream": "c", "device_us": 1000}],
      "intra_iter_deps": [["B", "A"], ["C", "B"]]})")
                        .plan;
  CHECK(swp::min_steady_iters(3) == 8);
  for (const auto engine : {swp::EngineKind::clock, swp::EngineKind::data_flow}) {
    CAPTURE(swp::engine_name(engine));
    swp::SyntheticRunOptions options{
        .engine = engine, .iters = 7, .runtime = {.backend = swp::Backend::sim}};
    const auto short_run = swp::run_synthetic(plan, options);
    CHECK(short_run.slots == 3);
    CHECK_FALSE(short_run.steady_state);
    // The whole run per iteration: 7 iterations take 9 stage times.
    CHECK(short_run.us_per_iter == doctest::Approx(9000.0 / 7));
    CHECK(short_run.bound_us_per_iter == doctest::Approx(1000));
    options.iters = 8;
    const auto measured = swp::run_synthetic(plan, options);
    CHECK(measured.steady_state);
    CHECK(measured.us_per_iter == doctest::Approx(1000));
    CHECK(measured.efficiency == doctest::Approx(1));
  }
}

TEST_CASE("the bound counts the jitter that falls in the measured iterations") {
  // Every 4th iteration's device work takes 4000 us instead of 100: the mean is 1075 us, but
  // a window holds a whole number of jitters, and its bound is exactly what it did.
  const auto plan = swp::parse_plan(R"({"tasks": [{"name": "A", "device_us": 100,
                                                   "jitter_every": 4, "jitter_device_us": 4000}]})")
                        .plan;
  for (const int iters : {8, 9, 10, 11, 12, 40, 41}) {
    CAPTURE(iters);
    const auto result =
        swp::run_synthetic(plan, {.iters = iters, .runtime = {.backend = swp::Backend::sim}});
    REQUIRE(result.steady_state);  // one slot: 4 iterations suffice
    const std::int64_t first = result.slots + 1, last = iters - result.slots - 1;
    double work = 0;
    for (std::int64_t i = first; i <= last; ++i) work += i % 4 == 3 ? 4000 : 100;
    CHECK(result.bound_us_per_iter ==
          doctest::Approx(work / static_cast<double>(last - first + 1)));
    CHECK(result.efficiency <= 1);
  }
}

TEST_CASE("run_synthetic rejects a cost or a run length the clock cannot represent") {
  swp::SyntheticRunOptions options{.iters = 10, .runtime = {.backend = swp::Backend::sim}};
  SUBCASE("a cost beyond the limit is rejected by validation, naming task and field") {
    for (const char* json : {R"({"tasks": [{"name": "A", "cpu_us": 1e16}]})",
                             R"({"tasks": [{"name": "A", "device_us": 1e12}]})",
                             R"({"tasks": [{"name": "A", "device_us": 1, "jitter_every": 2,
                                            "jitter_device_us": 1e13}]})"}) {
      CAPTURE(json);
      const auto plan = swp::parse_plan(json).plan;
      try {
        (void)swp::run_synthetic(plan, options);
        FAIL("the run was accepted");
      } catch (const swp::PlanError& e) {
        const std::string what = e.what();
        CHECK(what.find("'A'") != std::string::npos);
        CHECK(what.find("_us") != std::string::npos);
      }
    }
  }
  SUBCASE("a run whose virtual time would overflow the clock is refused before it starts") {
    const auto plan = swp::parse_plan(R"({"tasks": [{"name": "A", "cpu_us": 1e9},
                                                    {"name": "B", "device_us": 1e9}]})")
                          .plan;
    options.iters = 100'000'000;
    CHECK_THROWS_AS((void)swp::run_synthetic(plan, options), std::invalid_argument);
    // A profile that long names the options that make it so (its message named none).
    swp::SyntheticProfileOptions profile{.runtime = {.backend = swp::Backend::sim}};
    profile.profile.measure = 1'000'000;
    CHECK_THROWS_WITH_AS((void)swp::profile_synthetic(plan, profile),
                         doctest::Contains("warmup 3 + measure 1000000 x rounds 3 iterations, "
                                           "for a baseline and 2 task(s): 9.00001e+06 "
                                           "iterations of up to"),
                         std::invalid_argument);
  }
}

TEST_CASE("run_synthetic emits NVTX ranges where they are compiled in and refuses them elsewhere") {
  const auto plan = swp::parse_plan(R"({"tasks": [{"name": "A", "cpu_us": 1},
                                                  {"name": "B", "stage": 1, "device_us": 2}]})")
                        .plan;
  for (const auto engine : {swp::EngineKind::data_flow, swp::EngineKind::clock}) {
    swp::SyntheticRunOptions options{
        .engine = engine, .iters = 20, .runtime = {.backend = swp::Backend::sim}, .nvtx = true};
    if (swp::nvtx_compiled()) {
      CHECK(swp::run_synthetic(plan, options).stats.iterations == 20);
    } else {
      CHECK_THROWS_WITH_AS((void)swp::run_synthetic(plan, options),
                           doctest::Contains("NVTX"), std::invalid_argument);
    }
    options.nvtx = false;
    CHECK(swp::run_synthetic(plan, options).stats.iterations == 20);
  }
}

TEST_CASE("run_synthetic runs a plan that gives its streams priorities, on both engines") {
  // The run makes the plan's streams before its pipeline, to watch them: with the plan's
  // priorities, or the pipeline would refuse the streams it made at the default priority.
  swp::PipelinePlan plan;
  plan.add({"H2D"}, {.stage = 0, .stream = "memcpy", .stream_priority = -1}, {.device_us = 100});
  plan.add({"Dist"}, {.stage = 1, .stream = "data_dist", .stream_priority = -1}, {.device_us = 50});
  plan.add({"Forward"}, {.stage = 2}, {.device_us = 200});
  plan.intra_iter_deps = {{"Dist", "H2D"}, {"Forward", "Dist"}};
  for (const auto engine : {swp::EngineKind::data_flow, swp::EngineKind::clock}) {
    CAPTURE(swp::engine_name(engine));
    const auto result = swp::run_synthetic(
        plan, {.engine = engine, .iters = 20, .runtime = {.backend = swp::Backend::sim}});
    CHECK(result.stats.iterations == 20);
  }
}

TEST_CASE("a run's memory does not grow with its number of iterations") {
  // `swp run --iters` goes up to 1e8: the statistics are kept in O(1), not per iteration.
  const auto plan = swp::parse_plan(R"({"tasks": [{"name": "A", "cpu_us": 1, "device_us": 2},
                                                  {"name": "B", "stage": 1, "stream": "b",
                                                   "device_us": 3}],
                                        "intra_iter_deps": [["B", "A"]]})")
                        .plan;
  auto largest = [&](int iters) {
    swp::SyntheticRunOptions options{.iters = iters, .runtime = {.backend = swp::Backend::sim}};
    swp::test::AllocationCount count;
    (void)swp::run_synthetic(plan, options);
    const auto bytes = count.largest_allocation();
    count.stop();
    return bytes;
  };
  const auto short_run = largest(100);
  const auto long_run = largest(20'000);
  CHECK(long_run == short_run);
}

TEST_SUITE_END();

}  // namespace test_synthetic_run
