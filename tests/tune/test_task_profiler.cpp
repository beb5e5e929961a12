#include "swp/tune/task_profiler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace test_task_profiler {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using us = std::chrono::microseconds;

struct Fields {
  int value = 0;
};
using Ctx = swp::IterContext<int, Fields>;

swp::PipelinePlan costed(const std::vector<std::tuple<std::string, double, double>>& tasks) {
  swp::PipelinePlan plan;
  std::string previous;
  for (const auto& [name, cpu, device] : tasks) {
    plan.add(swp::PipelineTask(name), {.stage = 0, .stream = device > 0 ? "dev" : "default"},
             {.cpu_us = cpu, .device_us = device});
    if (!previous.empty()) plan.intra_iter_deps.push_back({name, previous});
    previous = name;
  }
  return plan;
}

constexpr double kUs = 1e-6;

}  // namespace

TEST_CASE("sim: CPU-only costs expose exactly their own time") {
  const auto plan = costed({{"Load", 30, 0}, {"Forward", 120, 0}, {"Step", 50, 0}});
  const auto result = swp::profile_synthetic(
      plan, {.profile = {.warmup = 1, .measure = 3, .rounds = 3},
             .runtime = {.backend = swp::Backend::sim}});
  CHECK(result.baseline_s == doctest::Approx(200 * kUs).epsilon(1e-9));
  REQUIRE(result.tasks.size() == 3);
  CHECK(result.tasks[0].task == "Load");  // the serial (topological) order
  CHECK(result.exposed_s("Load") == doctest::Approx(30 * kUs).epsilon(1e-9));
  CHECK(result.exposed_s("Forward") == doctest::Approx(120 * kUs).epsilon(1e-9));
  CHECK(result.exposed_s("Step") == doctest::Approx(50 * kUs).epsilon(1e-9));
  CHECK(result.sum_s() == doctest::Approx(result.baseline_s).epsilon(1e-9));
  CHECK(result.tasks[1].shortcut_s == doctest::Approx(80 * kUs).epsilon(1e-9));
}

TEST_CASE("sim: device-bound serial iterations give the closed-form exposed times") {
  // Serial iteration: A (cpu 10), B (cpu 5, then 100 of device work), C (cpu 5, under B's
  // device work). Each serial iteration starts once the device work of the one before it
  // completed (it would otherwise write the context that work may read), so every iteration
  // takes 15 + 100, whatever the round's length M:
  //   baseline = 115;   A skipped: 105  -> exposed(A) = 10
  //   B skipped: 15 (CPU only)          -> exposed(B) = 100
  //   C skipped: 115                    -> exposed(C) = 0 (hidden under the device work)
  // (Before that wait the device work of M iterations queued back to back and the next
  // iterations' CPU ran under it: baseline 100 + 15 / M.)
  for (int m : {1, 4, 10}) {
    CAPTURE(m);
    const auto plan = costed({{"A", 10, 0}, {"B", 5, 100}, {"C", 5, 0}});
    const auto result = swp::profile_synthetic(
        plan, {.profile = {.warmup = 2, .measure = m, .rounds = 3},
               .runtime = {.backend = swp::Backend::sim}});
    CHECK(result.baseline_s == doctest::Approx(115 * kUs).epsilon(1e-9));
    CHECK(result.exposed_s("A") == doctest::Approx(10 * kUs).epsilon(1e-9));
    CHECK(result.exposed_s("B") == doctest::Approx(100 * kUs).epsilon(1e-9));
    CHECK(result.exposed_s("C") == doctest::Approx(0.0));
  }
}

TEST_CASE("host: a profile measures wall time, never less than the CPU work it spins") {
  // Wall time on a shared machine: a busy core only makes rounds longer, so the one robust
  // check is the lower bound (each task's CPU cost is a busy spin of at least that long);
  // how close the exposed times come to the costs is a benchmark's business
  // (swp-bench profile), not a unit test's. The exact arithmetic is checked on sim above.
  const auto plan = costed({{"Load", 600, 0}, {"Forward", 2400, 0}, {"Step", 1200, 0}});
  const auto result = swp::profile_synthetic(
      plan, {.profile = {.warmup = 1, .measure = 3, .rounds = 3},
             .runtime = {.backend = swp::Backend::host, .workers = 1}});
  CHECK(result.baseline_s >= 4200 * kUs);
  REQUIRE(result.tasks.size() == 3);
  for (const char* task : {"Load", "Forward", "Step"}) {
    CAPTURE(task);
    CHECK(std::isfinite(result.exposed_s(task)));
  }
}

TEST_CASE("TaskProfiler profiles bound bodies; replays feed consumers; shortcut state is restored") {
  swp::Plan<Ctx> plan;
  std::atomic<int> produce_runs{0};
  std::vector<int> consumed;
  auto produce = plan.add("Produce",
                          [&](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
                            ++produce_runs;
                            co_await scope.cpu_work(us(40 * ctx.batch));
                            ctx.value = ctx.batch;
                          });
  plan.declare_writes(produce, swp::writes(&Fields::value));
  auto consume = plan.add("Consume", [&](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(us(10));
    consumed.push_back(ctx.value);
  });
  auto other = plan.add("Other", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(us(7));
  });
  plan.intra_iter_deps = {{consume, produce}};
  (void)other;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.enable_shortcut("Other");  // the caller's: kept through profiling, not profiled

  swp::TaskProfiler profiler(pipe);
  const auto results = profiler.profile_many(std::vector<int>{1, 2}, {.warmup = 1, .measure = 2, .rounds = 1});
  REQUIRE(results.size() == 2);
  for (int b = 1; b <= 2; ++b) {
    const auto& r = results[static_cast<std::size_t>(b - 1)];
    CAPTURE(b);
    CHECK(r.baseline_s == doctest::Approx((40.0 * b + 10) * kUs).epsilon(1e-9));
    CHECK(r.exposed_s("Produce") == doctest::Approx(40.0 * b * kUs).epsilon(1e-9));
    CHECK(r.exposed_s("Consume") == doctest::Approx(10 * kUs).epsilon(1e-9));
    CHECK_THROWS_AS((void)r.exposed_s("Other"), std::out_of_range);
  }
  CHECK(pipe.shortcuts() == std::set<std::string>{"Other"});
  // Per batch: warm-up 1 (it also caches Other) + baseline 2 + Produce's caching 1 (then
  // replays) + Consume's caching 1 and round 2 (Produce runs in both).
  CHECK(produce_runs.load() == 2 * (1 + 2 + 1 + 1 + 2));
  for (int v : consumed) CHECK((v == 1 || v == 2));
}

TEST_CASE("TaskProfiler errors: bad options, unknown skip_tasks, a filled pipeline, a failing task") {
  swp::Plan<Ctx> plan;
  std::atomic<int> calls{0};
  plan.add("Flaky", [&](Ctx&) {
    if (++calls > 4) throw std::runtime_error("flaky");
  });
  plan.add("Steady", [](Ctx&) {});
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  swp::TaskProfiler profiler(pipe);

  CHECK_THROWS_WITH_AS(profiler.profile(0, {.skip_tasks = {"Ghost"}}), doctest::Contains("'Ghost'"),
                       std::invalid_argument);
  CHECK_THROWS_AS(profiler.profile(0, {.measure = 0}), std::invalid_argument);
  CHECK_THROWS_AS(profiler.profile(0, {.rounds = 0}), std::invalid_argument);
  CHECK(calls == 0);

  pipe.fill_pipeline(std::vector<int>{1});
  CHECK_THROWS_AS(profiler.profile(0), swp::PipelineStateError);
  pipe.drain();

  // Fails in the middle of profiling: the error names the task, no shortcut is left behind.
  calls = 0;
  CHECK_THROWS_AS(profiler.profile(0, {.warmup = 1, .measure = 1, .rounds = 1}), swp::TaskError);
  CHECK(pipe.shortcuts().empty());

  // skip_tasks leaves a task out.
  calls = -1000;
  const auto r = profiler.profile(0, {.warmup = 0, .measure = 1, .rounds = 1, .skip_tasks = {"Flaky"}});
  REQUIRE(r.tasks.size() == 1);
  CHECK(r.tasks[0].task == "Steady");
}

}  // namespace test_task_profiler
