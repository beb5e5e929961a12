#include "swp/tune/plan_tuner.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/names.hpp"
#include "support/plans.hpp"
#include "swp/core/plan_error.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/recsys_costs.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace test_plan_tuner {  // each test file's names apart (unity builds)

namespace {

// Short runs: every candidate is simulated, and the suite also runs under the sanitizers.
constexpr swp::TuneOptions kQuick{.iters = 64, .search_iters = 24};

swp::TuneOptions quick(int max_depth, std::size_t max_candidates = kQuick.max_candidates) {
  swp::TuneOptions o = kQuick;
  o.max_depth = max_depth;
  o.max_candidates = max_candidates;
  return o;
}

// seed 000's SparseDist with recsys costs and every task on stage 0: copy, input distribution
// and compute of one batch run back to back.
swp::PipelinePlan flat_sparse_dist() {
  auto plan = swp::test::sparse_dist_plan();
  swp::presets::apply_recsys_costs(plan);
  for (auto& t : plan.tasks) t.schedule.stage = 0;
  plan.pipeline_depth = 1;
  return plan;
}

swp::StageAssignment stages_of(const swp::PipelinePlan& plan) {
  swp::StageAssignment s;
  for (const auto& t : plan.tasks) s.push_back(t.schedule.stage);
  return s;
}

bool validates(const swp::PipelinePlan& plan) {
  try {
    swp::validate(plan);
    return true;
  } catch (const swp::PlanError&) {
    return false;
  }
}

}  // namespace

TEST_SUITE_BEGIN("engine plan tuner");

TEST_CASE("stage_assignments lists exactly the stage labelings that validate") {
  const auto plan = swp::test::sparse_dist_plan();
  const auto graph = swp::validate(plan);
  const int cap = 3;
  const auto all = swp::stage_assignments(graph, cap, 10'000);
  REQUIRE(all.has_value());

  // Brute force over every labeling with stages 0..cap-1 that uses stage 0.
  std::set<swp::StageAssignment> expected;
  swp::StageAssignment s(plan.tasks.size(), 0);
  for (;;) {
    if (std::count(s.begin(), s.end(), 0) > 0 && validates(swp::with_stages(plan, s)))
      expected.insert(s);
    std::size_t t = 0;
    while (t < s.size() && ++s[t] == cap) s[t++] = 0;
    if (t == s.size()) break;
  }
  const std::set<swp::StageAssignment> found(all->begin(), all->end());
  CHECK(found.size() == all->size());  // no duplicates
  CHECK(found == expected);
  CHECK(found.size() == 57);
  CHECK(found.contains(stages_of(plan)));

  CHECK_FALSE(swp::stage_assignments(graph, cap, 56).has_value());
  const swp::StageAssignment zero(plan.tasks.size(), 0);
  CHECK(swp::stage_assignments(graph, 1, 1) == std::vector<swp::StageAssignment>{zero});
  CHECK_THROWS_AS(swp::stage_assignments(graph, 0, 10), std::invalid_argument);
}

TEST_CASE("stage_assignments keeps nothing when there are more than the limit") {
  // 40 independent tasks under a cap of 2: 2^40 - 1 assignments. Refusing them used to cost
  // `limit` stored assignments first (here 200,000 vectors; with --max-candidates 1e7 and
  // hundreds of tasks, gigabytes and std::bad_alloc).
  swp::PipelinePlan plan;
  for (int i = 0; i < 40; ++i) plan.add(swp::PipelineTask{swp::test::numbered("T", i)}, {});
  const auto graph = swp::validate(plan);
  std::size_t allocations = 0;
  {
    swp::test::AllocationCount count;
    const bool listed = swp::stage_assignments(graph, 2, 200'000).has_value();
    allocations = count.stop();
    CHECK_FALSE(listed);
  }
  CHECK(allocations < 100);
}

TEST_CASE("stage_assignments come in lexicographic order along the plan's topological order") {
  // Declared C, B, A with A <- B: the topological order is B, A, C (index 1, 2, 0), so the
  // assignments are sorted by (stage of B, stage of A, stage of C).
  const auto graph = swp::validate(swp::test::make_plan({{"C"}, {"B"}, {"A"}}, {{"A", "B"}}));
  REQUIRE(graph.topological_order() == std::vector<swp::TaskIndex>{1, 2, 0});
  const auto all = swp::stage_assignments(graph, 2, 100);
  REQUIRE(all.has_value());
  CHECK(all->size() == 5);  // B <= A, some task on stage 0: (0,0,*), (0,1,*) and (1,1,0)
  auto along_order = [&](const swp::StageAssignment& s) {
    std::vector<int> key;
    for (swp::TaskIndex t : graph.topological_order()) key.push_back(s[t]);
    return key;
  };
  for (std::size_t k = 1; k < all->size(); ++k)
    CHECK(along_order((*all)[k - 1]) < along_order((*all)[k]));
}

TEST_CASE("stage_assignments refuses an inspected graph with an intra cycle") {
  const auto inspection =
      swp::inspect(swp::test::make_plan({{"A"}, {"B"}}, {{"A", "B"}, {"B", "A"}}));
  CHECK_THROWS_WITH_AS(swp::stage_assignments(inspection.graph, 2, 100),
                       "stage_assignments: intra dependencies form a cycle", std::invalid_argument);
}

TEST_CASE("tune_plan is never slower than the input on seed 000's presets with recsys costs") {
  for (const auto& info : swp::presets::preset_catalogue()) {
    CAPTURE(info.name);
    auto plan = swp::presets::make_preset(info.name).plan();
    swp::presets::apply_recsys_costs(plan);
    const auto result = swp::tune_plan(plan, kQuick);
    const auto input_depth = swp::validate(plan).depth();
    CHECK(result.baseline_us_per_iter > 0);
    CHECK(result.us_per_iter <= result.baseline_us_per_iter * (1 + 1e-9));
    CHECK(result.exhaustive);
    CHECK(result.max_depth == input_depth);
    CHECK(result.baseline_depth == input_depth);
    CHECK(result.depth <= input_depth);
    CHECK(validates(result.best));
    CHECK(result.best.pipeline_depth == result.depth);
    for (std::size_t t = 0; t < plan.tasks.size(); ++t) {  // only stages change
      CHECK(result.best.tasks[t].task.name == plan.tasks[t].task.name);
      CHECK(result.best.tasks[t].schedule.stream == plan.tasks[t].schedule.stream);
      CHECK(result.best.tasks[t].schedule.thread_group == plan.tasks[t].schedule.thread_group);
    }
    CHECK(result.best.intra_iter_deps == plan.intra_iter_deps);
    CHECK(result.best.stream_aliases == plan.stream_aliases);
  }
}

TEST_CASE("tune_plan overlaps a slow copy that a poor stage assignment serializes with compute") {
  SUBCASE("copy then compute: the only faster assignment is determined") {
    auto plan = swp::test::make_plan({{"H2D", 0, "memcpy"}, {"Compute", 0}}, {{"Compute", "H2D"}});
    plan.tasks[0].cost = {.cpu_us = 10, .device_us = 1000};
    plan.tasks[1].cost = {.cpu_us = 10, .device_us = 1000};
    const auto result = swp::tune_plan(plan, quick(2));
    CHECK(stages_of(result.best) == swp::StageAssignment{0, 1});
    CHECK(result.depth == 2);
    CHECK(result.baseline_us_per_iter == doctest::Approx(2000).epsilon(0.02));
    CHECK(result.us_per_iter == doctest::Approx(1000).epsilon(0.02));
    CHECK(result.speedup() > 1.9);
    CHECK(result.candidates == 2);
  }
  SUBCASE("SparseDist on one stage reaches its bound within depth 3") {
    const auto plan = flat_sparse_dist();
    const auto result = swp::tune_plan(plan, quick(3));
    CHECK(result.us_per_iter < result.baseline_us_per_iter);
    CHECK(result.depth <= 3);
    CHECK(result.depth >= 2);
    const double bound = swp::bound_us_per_iter(swp::validate(result.best));
    CHECK(result.us_per_iter == doctest::Approx(bound).epsilon(1e-6));
    // Ties keep the fewest tasks moved: only OptimizerStep leaves stage 0, which lets the next
    // batch's copy and input distribution run under this batch's compute.
    auto expected = stages_of(plan);
    expected.back() = 1;
    CHECK(stages_of(result.best) == expected);
  }
}

TEST_CASE("tune_plan keeps the tuned plan within the depth cap") {
  const auto plan = flat_sparse_dist();
  SUBCASE("a cap of 1 leaves only the input") {
    const auto result = swp::tune_plan(plan, quick(1));
    CHECK(result.candidates == 1);
    CHECK(result.depth == 1);
    CHECK(stages_of(result.best) == stages_of(plan));
    CHECK(result.us_per_iter == result.baseline_us_per_iter);
  }
  SUBCASE("an input deeper than the cap is tuned into it") {
    auto deep = swp::presets::make_preset("semi_sync").plan();
    swp::presets::apply_recsys_costs(deep);
    REQUIRE(swp::validate(deep).depth() == 4);
    const auto result = swp::tune_plan(deep, quick(2));
    CHECK(result.max_depth == 2);
    CHECK(result.depth <= 2);
    CHECK(result.baseline_depth == 4);
    CHECK(validates(result.best));
  }
  SUBCASE("the default cap, the input's depth, is at most max_tune_depth") {
    // A depth of 70 made the default cap 70, past the 1..64 that --max-depth allows.
    swp::PipelinePlan deep;
    deep.add({"A"}, {.stage = 0}, {.cpu_us = 1});
    deep.add({"B"}, {.stage = 69}, {.cpu_us = 1});
    const auto result = swp::tune_plan(deep, quick(0, 20));
    CHECK(result.max_depth == swp::max_tune_depth);
    CHECK(result.baseline_depth == 70);
    CHECK(result.depth <= swp::max_tune_depth);
    CHECK(validates(result.best));
  }
  SUBCASE("an input deeper than max_tune_depth that no candidate beats is kept (default cap)") {
    // A chain of 70 tasks on lanes of their own, a stage each: one task's time per iteration.
    // Under 64 stages two tasks share a stage and a period, and the search only finds slower
    // plans; the cap bounds the search, not the memory the user asked for.
    swp::PipelinePlan deep;
    std::vector<swp::TaskHandle> chain;
    for (int i = 0; i < 70; ++i)
      chain.push_back(deep.add({"T" + std::to_string(i)},
                               {.stage = i, .thread_group = "g" + std::to_string(i)},
                               {.cpu_us = 10}));
    for (std::size_t i = 1; i < chain.size(); ++i)
      deep.intra_iter_deps.push_back({chain[i], chain[i - 1]});
    SUBCASE("without --max-depth the input wins") {
      const auto result = swp::tune_plan(deep, quick(0, 20));
      CHECK(result.max_depth == swp::max_tune_depth);
      CHECK(result.kept_deep_input);
      CHECK(stages_of(result.best) == stages_of(deep));
      CHECK(result.depth == 70);
      CHECK(result.us_per_iter == result.baseline_us_per_iter);
      CHECK(result.speedup() == 1);
    }
    SUBCASE("an explicit cap is a memory cap: the input is no candidate") {
      const auto result = swp::tune_plan(deep, quick(swp::max_tune_depth, 20));
      CHECK_FALSE(result.kept_deep_input);
      CHECK(result.depth <= swp::max_tune_depth);
      CHECK(result.us_per_iter > result.baseline_us_per_iter);
    }
  }
  SUBCASE("local search beyond max_candidates stays in the cap and never loses to the input") {
    const auto result = swp::tune_plan(plan, quick(4, 12));
    CHECK_FALSE(result.exhaustive);
    CHECK(result.candidates <= 12);
    CHECK(result.depth <= 4);
    CHECK(result.us_per_iter < result.baseline_us_per_iter);
    CHECK(validates(result.best));
  }
}

TEST_CASE("tune_plan times steady states even when iters are fewer than they need") {
  // Runs shorter than min_steady_iters(depth) measured the whole run (fill and drain included)
  // and were compared as steady states: a wrong baseline and a false speedup.
  const auto steady = [](const swp::PipelinePlan& plan) {
    swp::SyntheticRunOptions o;
    o.engine = swp::EngineKind::clock;
    o.iters = 400;
    o.runtime.backend = swp::Backend::sim;
    const auto r = swp::run_synthetic(plan, o);
    REQUIRE(r.steady_state);
    return r.us_per_iter;
  };
  SUBCASE("SparseDist at depth 3 with 6 iterations: both plans run at the bound") {
    auto plan = swp::presets::make_preset("sparse_dist").plan();
    swp::presets::apply_recsys_costs(plan);
    REQUIRE(swp::min_steady_iters(swp::validate(plan).depth()) > 6);
    const auto result = swp::tune_plan(plan, {.iters = 6, .search_iters = 6});
    CHECK(result.baseline_us_per_iter == doctest::Approx(steady(plan)).epsilon(1e-9));
    CHECK(result.us_per_iter == doctest::Approx(steady(result.best)).epsilon(1e-9));
    CHECK(result.speedup() == doctest::Approx(1).epsilon(1e-9));
  }
  SUBCASE("a chain of 40 tasks on 40 stages with the default iters") {
    swp::PipelinePlan chain;
    for (int t = 0; t < 40; ++t) {
      const std::string s = std::to_string(t);
      chain.add({"T" + s}, {.stage = t, .stream = "s" + s, .thread_group = "l" + s},
                {.device_us = 10});
      if (t > 0) chain.intra_iter_deps.push_back({"T" + s, "T" + std::to_string(t - 1)});
    }
    REQUIRE(swp::min_steady_iters(40) > swp::TuneOptions{}.search_iters);
    const auto result = swp::tune_plan(chain, quick(0, 4));
    CHECK(result.baseline_us_per_iter == doctest::Approx(steady(chain)).epsilon(1e-9));
    CHECK(result.us_per_iter == doctest::Approx(steady(result.best)).epsilon(1e-9));
  }
}

TEST_CASE("tune_plan simulates the costs a profile measured when given them") {
  // The user's plan has no synthetic costs (real bodies); a profile of its tasks has the times.
  const auto costed = flat_sparse_dist();
  auto costless = costed;
  for (auto& t : costless.tasks) t.cost = {};
  const auto profile = swp::profile_synthetic(
      costed, {.profile = {.warmup = 1, .measure = 2, .rounds = 1},
               .runtime = {.backend = swp::Backend::sim}});

  const auto blind = swp::tune_plan(costless, quick(3));
  CHECK(blind.us_per_iter == 0);  // nothing to simulate: no assignment is better

  auto options = quick(3);
  options.measured = profile;
  const auto informed = swp::tune_plan(costless, options);
  // The exposed times on sim are the device times (each task's 10 µs of CPU overlaps), 3170 µs
  // in all. Simulated as device time on each task's stream, the flat plan takes 3150 µs
  // (ZeroGrad's 20 µs overlap the copy), the tuned one the default stream's 2270 µs, as the
  // flat plan with its own costs does.
  CHECK(profile.sum_s() * 1e6 == doctest::Approx(3170));
  CHECK(informed.baseline_us_per_iter == doctest::Approx(3150).epsilon(1e-3));
  CHECK(informed.us_per_iter == doctest::Approx(2270).epsilon(1e-3));
  CHECK(informed.depth >= 2);
  for (const auto& t : informed.best.tasks) CHECK(t.cost == swp::SyntheticCost{});  // input's costs

  // The same search as over the plan carrying the measured costs.
  const auto direct = swp::tune_plan(swp::with_profiled_costs(costless, profile), quick(3));
  CHECK(stages_of(informed.best) == stages_of(direct.best));
  CHECK(informed.us_per_iter == direct.us_per_iter);

  options.measured->tasks.push_back({"Ghost", 1e-6, 0});
  CHECK_THROWS_WITH_AS(swp::tune_plan(costless, options), doctest::Contains("'Ghost'"),
                       std::invalid_argument);
}

TEST_CASE("tune_plan rejects invalid plans and options") {
  SUBCASE("a plan breaking corollary 1 names its tasks") {
    auto plan = swp::test::pqra_plan();
    try {
      swp::tune_plan(plan, kQuick);
      FAIL("no PlanError");
    } catch (const swp::PlanError& e) {
      CHECK(e.breaks(swp::PlanRule::corollary_1));
      CHECK(std::string(e.what()).find("R") != std::string::npos);
    }
  }
  SUBCASE("bad options") {
    const auto plan = flat_sparse_dist();
    CHECK_THROWS_AS(swp::tune_plan(plan, quick(-1)), std::invalid_argument);
    CHECK_THROWS_AS(swp::tune_plan(plan, quick(swp::max_tune_depth + 1)), std::invalid_argument);
    auto o = kQuick;
    o.iters = 0;
    CHECK_THROWS_AS(swp::tune_plan(plan, o), std::invalid_argument);
    o = kQuick;
    o.max_candidates = 0;
    CHECK_THROWS_AS(swp::tune_plan(plan, o), std::invalid_argument);
    CHECK_THROWS_AS(swp::with_stages(plan, {0, 1}), std::invalid_argument);
  }
  SUBCASE("runs longer than their clock can count, named by the option") {
    const auto plan = swp::parse_plan(R"({"tasks": [{"name": "A", "cpu_us": 1e9},
                                                    {"name": "B", "device_us": 1e9}]})")
                          .plan;
    auto o = kQuick;
    o.search_iters = 1'000'000;
    CHECK_THROWS_WITH_AS(swp::tune_plan(plan, o),
                         doctest::Contains("search_iters 1000000: 1e+06 iterations of up to"),
                         std::invalid_argument);
  }
}

TEST_SUITE_END();

TEST_CASE("with_stages gives a plan with bodies the tuned stages and keeps its bodies") {
  using Ctx = swp::IterContext<int>;
  swp::Plan<Ctx> plan(flat_sparse_dist());
  int steps = 0;
  plan.bind("OptimizerStep", [&steps](Ctx&) { ++steps; });
  const auto result = swp::tune_plan(plan.untyped(), quick(3));
  REQUIRE(result.depth >= 2);
  const swp::Plan<Ctx> tuned = swp::with_stages(plan, result.best);
  CHECK(stages_of(tuned.untyped()) == stages_of(result.best));
  CHECK(tuned.pipeline_depth == result.best.pipeline_depth);
  CHECK(stages_of(plan.untyped()) != stages_of(result.best));  // the input is unchanged
  REQUIRE(tuned.body("OptimizerStep") != nullptr);
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, tuned);
  CHECK(pipe.depth() == result.depth);
  CHECK(pipe.run(std::vector<int>(4, 0)).iterations == 4);
  CHECK(steps == 4);

  swp::PipelinePlan other;
  other.add({"X"});
  CHECK_THROWS_AS((void)swp::with_stages(plan, other), std::invalid_argument);
}

}  // namespace test_plan_tuner
