// Every task alone on its lane: the runs that keep no join counters (one thread: data-flow's
// whole iterations in place, the clock's uncounted periods) and their hand-overs to the general
// path match a serial run; so do the claimed lanes' releases with workers.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/bound_plans.hpp"
#include "support/busy_workers.hpp"
#include "support/checked_runs.hpp"
#include "support/drive.hpp"
#include "support/engines.hpp"
#include "support/random_plans.hpp"
#include "support/resumed_later.hpp"
#include "support/seed.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_pipeline_in_place {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;
using swp::TaskIndex;
using swp::test::bind;
using swp::test::Drive;
using swp::test::next_all;
using swp::test::Results;

namespace {

// The values a serial run of `source` gives: what a run with threads must match.
template <class Engine, class Batches>
void run_serially(const swp::PipelinePlan& source, int max_depth, const Batches& batches,
                  Results& out) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  auto plan = bind(source, out);
  Engine::template make<Ctx>(rt, plan, max_depth)->run_serial(batches);
}

// Every task alone on its lane (1000 lane names: a plan rarely puts two on one), not globally
// ordered, no observer: data-flow runs each admitted iteration whole in place
// (EngineCore::run_iteration_here) with the caller the only thread, and the clock runs its
// periods uncounted. Each hands the rest of an iteration to its general path when a body
// suspends (resumed by another thread) or uses its stream. With workers, each task's releases
// go straight to the pool under its lane's claim (LaneClaim).
template <class Engine>
void run_alone_on_lanes(swp::test::CheckedRuns runs, double device_probability) {
  runs.shape = {.lanes = 1000,
                .ordered_probability = 0,
                .max_device_us = 3,
                .max_cpu_us = 2,
                .device_probability = device_probability};
  swp::test::checked_runs<Engine>(runs);
}

}  // namespace

TEST_CASE_TEMPLATE(
    "with the caller the only thread and every task alone on its lane, the "
    "iterations match a serial run",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("bodies that complete at once") {
    run_alone_on_lanes<Engine>({.plans = 60, .seed = 41, .drive = Drive::progress}, 0);
  }
  SUBCASE("some bodies resumed by another thread") {
    run_alone_on_lanes<Engine>(
        {.plans = 40, .seed = 43, .drive = Drive::progress, .suspend_probability = 0.05}, 0);
  }
  SUBCASE("device work") {
    run_alone_on_lanes<Engine>(
        {.plans = 40, .seed = 47, .drive = Drive::progress, .suspend_probability = 0.02}, 0.2);
  }
  SUBCASE("co_await next()") {
    run_alone_on_lanes<Engine>(
        {.plans = 30, .seed = 53, .drive = Drive::next, .suspend_probability = 0.05}, 0);
  }
  SUBCASE("bodies resumed by another thread, which a second thread driving the pool may run") {
    run_alone_on_lanes<Engine>({.plans = 30,
                                .seed = 59,
                                .drive = Drive::progress,
                                .suspend_probability = 0.1,
                                .second_driver = true},
                               0);
  }
}

TEST_CASE_TEMPLATE(
    "with a worker and every task alone on its lane, the iterations match a serial run",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Released under their lanes' claims to the pool, where the caller and the worker run them;
  // a body that stalls leaves what the caller's queue holds to the worker (stolen from a
  // stuck owner).
  SUBCASE("bodies that stall now and then") {
    run_alone_on_lanes<Engine>({.plans = 40,
                                .seed = 61,
                                .drive = Drive::progress,
                                .workers = 1,
                                .stall_probability = 0.05},
                               0);
  }
  SUBCASE("stalls, bodies resumed by another thread, device work") {
    run_alone_on_lanes<Engine>({.plans = 30,
                                .seed = 67,
                                .drive = Drive::progress,
                                .workers = 1,
                                .suspend_probability = 0.05,
                                .stall_probability = 0.05},
                               0.1);
  }
  SUBCASE("stalls, with a second thread driving the pool") {
    run_alone_on_lanes<Engine>({.plans = 30,
                                .seed = 71,
                                .drive = Drive::progress,
                                .workers = 1,
                                .suspend_probability = 0.05,
                                .stall_probability = 0.05,
                                .second_driver = true},
                               0);
  }
  SUBCASE("bodies that complete at once, two workers") {
    run_alone_on_lanes<Engine>({.plans = 40, .seed = 73, .drive = Drive::progress, .workers = 2},
                               0);
  }
  SUBCASE("long runs with rare stalls") {
    run_alone_on_lanes<Engine>({.plans = 8,
                                .seed = 79,
                                .drive = Drive::progress,
                                .workers = 1,
                                .max_iterations = 600,
                                .stall_probability = 0.002},
                               0);
  }
}

TEST_CASE_TEMPLATE(
    "many pipelines on one pool with a worker, driven in turns by one thread, each "
    "match a serial run",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Driven in turns, each pipeline's caller is away while the others make progress, so the
  // worker runs what one pipeline left in the caller's queue while the caller drives another;
  // a body stalls now and then, past the worker's patience, so it also takes work from a
  // caller stuck in a body.
  constexpr int pipelines = 20;
  std::mt19937 rng(swp::test::seed(83));
  const swp::test::RandomPlanShape shape{.lanes = 1000,
                                         .ordered_probability = 0,
                                         .max_device_us = 0,
                                         .max_cpu_us = 0,
                                         .device_probability = 0};
  for (int n = 0; n < 3; ++n) {
    // Members by name, not a structured binding: clang 14 cannot capture a binding in a
    // lambda (CAPTURE makes one).
    const swp::test::RandomRun drawn = swp::test::random_run(rng, 40, shape);
    const auto& source = drawn.source;
    const auto& graph = drawn.graph;
    const auto iterations = drawn.iterations;
    const auto max_depth = drawn.max_depth;
    const auto& batches = drawn.batches;
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));
    Results serial_results;
    run_serially<Engine>(source, max_depth, batches, serial_results);
    std::set<std::pair<TaskIndex, std::int64_t>> stalling;
    for (std::int64_t i = 0; i < iterations; ++i)
      for (TaskIndex t = 0; t < graph.size(); ++t)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.05) stalling.insert({t, i});
    const swp::test::BodyHook hook = [&](TaskIndex t, std::int64_t i) -> swp::Co<void> {
      if (stalling.contains({t, i})) std::this_thread::sleep_for(300us);
      return {};
    };
    swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
    std::vector<std::unique_ptr<Results>> results;
    std::vector<swp::Plan<Ctx>> plans;
    plans.reserve(pipelines);  // each pipeline keeps its plan's bodies where they are
    std::vector<std::unique_ptr<swp::Pipeline<Ctx>>> pipes;
    for (int k = 0; k < pipelines; ++k) {
      results.push_back(std::make_unique<Results>());
      // Lanes of its own: a lane is the runtime's, and in place needs each task alone on it.
      swp::PipelinePlan own = source;
      std::string suffix(1, '_');
      suffix += std::to_string(k);
      for (auto& task : own.tasks) task.schedule.thread_group.append(suffix);
      plans.push_back(bind(own, *results.back(), {~TaskIndex{0}, -1}, &hook));
      pipes.push_back(Engine::template make<Ctx>(rt, plans.back(), max_depth));
      pipes.back()->set_timeouts({.retire = 20s});
      pipes.back()->fill_pipeline(batches);
    }
    std::vector<std::vector<std::int64_t>> retired(pipelines);
    for (bool any = true; any;) {
      any = false;
      for (int k = 0; k < pipelines; ++k) {
        if (auto i = pipes[static_cast<std::size_t>(k)]->progress()) {
          retired[static_cast<std::size_t>(k)].push_back(i->iter());
          any = true;
        }
      }
    }
    std::vector<std::int64_t> expected(static_cast<std::size_t>(iterations));
    for (std::int64_t i = 0; i < iterations; ++i) expected[static_cast<std::size_t>(i)] = i;
    for (int k = 0; k < pipelines; ++k) {
      CAPTURE(k);
      CHECK(retired[static_cast<std::size_t>(k)] == expected);
      pipes[static_cast<std::size_t>(k)]->drain();
      CHECK(results[static_cast<std::size_t>(k)]->value == serial_results.value);
      for (const auto& [key, runs] : results[static_cast<std::size_t>(k)]->runs) CHECK(runs == 1);
    }
  }
}

TEST_CASE("with a worker that takes none of the work, the data-flow caller's runs match the plan") {
  // A chain of four short tasks, each alone on its lane, every value derived from the one
  // before; the pool's only worker is kept busy for most of the run, then freed. The caller
  // runs every task meanwhile, so (tasks this short) it runs whole iterations in place after a
  // while (DataFlowRelease::note_help), a body that suspends handing the rest of its
  // iteration over midway; then the worker is offered work again. Every value and the retire
  // order must be the plan's, each body run once.
  constexpr std::int64_t iterations = 24000;
  constexpr std::int64_t busy_for = 18000;
  struct Fields {
    std::uint64_t a = 0, b = 0, c = 0;
  };
  using Chain = swp::IterContext<std::uint64_t, Fields>;
  std::vector<std::uint64_t> out(static_cast<std::size_t>(iterations), 0);
  std::vector<int> ran(static_cast<std::size_t>(4 * iterations), 0);
  std::vector<std::thread> resumers;  // (joined after the run, on this thread)
  const auto count = [&](int task, std::int64_t i) {
    ++ran[static_cast<std::size_t>(4 * i + task)];
  };
  swp::Plan<Chain> plan;
  const auto a = plan.add(
      "a",
      [&](Chain& ctx) {
        count(0, ctx.iter_idx);
        ctx.a = ctx.batch * 3 + 1;
      },
      {.stage = 0, .thread_group = "chain_a"});
  const auto b = plan.add(
      "b",
      [&](Chain& ctx) {
        count(1, ctx.iter_idx);
        ctx.b = ctx.a ^ 0x5aU;
      },
      {.stage = 1, .thread_group = "chain_b"});
  // Suspends in one iteration of 997 until another thread resumes it.
  std::mutex resumers_mutex;
  const auto c = plan.add(
      "c",
      [&](Chain& ctx) -> swp::Co<void> {
        count(2, ctx.iter_idx);
        if (ctx.iter_idx % 997 == 5)
          co_await swp::test::resumed_by_another_thread(resumers, resumers_mutex);
        ctx.c = ctx.b + ctx.a;
      },
      {.stage = 2, .thread_group = "chain_c"});
  plan.add(
      "d",
      [&](Chain& ctx) {
        count(3, ctx.iter_idx);
        out[static_cast<std::size_t>(ctx.iter_idx)] = ctx.c * 2;
      },
      {.stage = 3, .thread_group = "chain_d"});
  plan.intra_iter_deps.push_back({"b", "a"});
  plan.intra_iter_deps.push_back({"c", "b"});
  plan.intra_iter_deps.push_back({"d", "c"});
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  swp::DataFlowPipeline<Chain> pipe(rt, plan, 4);
  std::vector<std::int64_t> retired;
  {
    swp::test::BusyWorkers busy(rt.scheduler(), 1);
    const swp::test::BusyWorkers::ReleaseOnExit release(&busy);
    std::uint64_t next = 0;
    pipe.fill_pipeline([&]() -> std::optional<std::uint64_t> {
      if (next == static_cast<std::uint64_t>(iterations)) return std::nullopt;
      return next++ * 7;
    });
    while (auto r = pipe.progress()) {
      retired.push_back(r->iter());
      if (std::ssize(retired) == busy_for) busy.release();
    }
  }
  for (std::thread& resumer : resumers) resumer.join();
  REQUIRE(std::ssize(retired) == iterations);
  std::int64_t wrong = 0, misordered = 0, not_once = 0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    const std::uint64_t batch = static_cast<std::uint64_t>(i) * 7;
    const std::uint64_t va = batch * 3 + 1;
    if (out[static_cast<std::size_t>(i)] != ((va ^ 0x5aU) + va) * 2) ++wrong;
    if (retired[static_cast<std::size_t>(i)] != i) ++misordered;
    for (int task = 0; task < 4; ++task)
      if (ran[static_cast<std::size_t>(4 * i + task)] != 1) ++not_once;
  }
  CHECK(wrong == 0);
  CHECK(misordered == 0);
  CHECK(not_once == 0);
}

}  // namespace test_pipeline_in_place
