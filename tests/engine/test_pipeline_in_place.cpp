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

#include "support/alone_thresholds.hpp"
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
// (UncountedRuns::run_iteration) with the caller the only thread, and the clock runs its
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
  SUBCASE("run(), which the clock's periods retire within (EngineCore::advance_may_retire_)") {
    run_alone_on_lanes<Engine>(
        {.plans = 40, .seed = 57, .drive = Drive::run, .suspend_probability = 0.05}, 0);
    run_alone_on_lanes<Engine>(
        {.plans = 30, .seed = 58, .drive = Drive::run, .suspend_probability = 0.02}, 0.2);
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

TEST_CASE_TEMPLATE("with a worker that takes none of the work, the caller's runs match the plan",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // A chain of four short tasks, each alone on its lane, every value derived from the one
  // before; the pool's only worker is kept busy for most of the run, then freed. The caller
  // runs every task meanwhile, so (tasks this short) it runs them uncounted after a while
  // (AloneWindow: data-flow whole iterations in place, the clock its periods once the
  // iterations in flight retired), a body that suspends handing the rest over to the general
  // path midway; then the worker is offered work again. Every value and the retire order must
  // be the plan's, each body run once.
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
  const auto pipe = Engine::template make<Chain>(rt, plan, 4);
  std::vector<std::int64_t> retired;
  {
    swp::test::BusyWorkers busy(rt.scheduler(), 1);
    const swp::test::BusyWorkers::ReleaseOnExit release(&busy);
    std::uint64_t next = 0;
    pipe->fill_pipeline([&]() -> std::optional<std::uint64_t> {
      if (next == static_cast<std::uint64_t>(iterations)) return std::nullopt;
      return next++ * 7;
    });
    while (auto r = pipe->progress()) {
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


namespace {

// A random plan of tasks short enough for the alone window (AloneWindow), each alone on its
// lane, checked as it runs, for as long as `run_for` lasts: each body checks that what it waits
// for (its intra and inter dependencies, its own instance before) finished, and stores a value
// derived from theirs in a ring of `ring` iterations; every retired iteration's values are
// compared with a serial computation of the same plan, made in step by the caller. Odd tasks'
// bodies are coroutines that suspend (resumed by another thread) for one instance in
// `suspend_every` (0: never).
class ShortTasks {
 public:
  static constexpr std::int64_t ring = 32;  // more than any pipeline here keeps in flight

  ShortTasks(const swp::PipelinePlan& source, std::int64_t suspend_every)
      : graph_(swp::validate(source)),
        suspend_every_(suspend_every),
        stamps_(static_cast<std::size_t>(ring) * graph_.size()),
        values_(static_cast<std::size_t>(ring) * graph_.size()),
        expected_(graph_.size()) {
    for (auto& stamp : stamps_) stamp.store(-1);
    for (TaskIndex t = 0; t < graph_.size(); ++t) {
      swp::TaskSchedule schedule = graph_.schedule(t);
      if (t % 2 == 0) {
        plan_.add(graph_.name(t), [this, t](Ctx& ctx) { body(t, ctx); }, schedule);
      } else {
        plan_.add(
            graph_.name(t),
            [this, t](Ctx& ctx) -> swp::Co<void> {
              const std::int64_t i = ctx.iter_idx - ctx.first_iter;
              if (suspend_every_ > 0 && (i * 31 + static_cast<std::int64_t>(t)) % suspend_every_ == 7)
                co_await swp::test::resumed_by_another_thread(resumers_, resumers_mutex_);
              body(t, ctx);
            },
            schedule);
      }
    }
    plan_.intra_iter_deps = source.intra_iter_deps;
    plan_.inter_iter_deps = source.inter_iter_deps;
  }
  ShortTasks(const ShortTasks&) = delete;
  ShortTasks& operator=(const ShortTasks&) = delete;
  ~ShortTasks() { join_resumers(); }

  // A resumer may still be inside the post that resumed its body once the run is over: call
  // this before the runtime goes.
  void join_resumers() {
    for (std::thread& resumer : resumers_) resumer.join();
    resumers_.clear();
  }

  [[nodiscard]] const swp::Plan<Ctx>& plan() const noexcept { return plan_; }

  // The caller's check of retired iteration i (in order), against the serial values.
  void retired(std::int64_t i) {
    std::vector<std::uint64_t> before = expected_;
    for (TaskIndex t : graph_.topological_order()) {
      std::uint64_t v = swp::test::mix(t, batch(i));
      for (TaskIndex d : graph_.intra_deps(t)) v = swp::test::mix(v, expected_[d]);
      if (i > 0)
        for (TaskIndex d : graph_.inter_deps(t)) v = swp::test::mix(v, before[d]);
      expected_[t] = v;
      const std::size_t at = slot(t, i);
      if (stamps_[at].load() != i || values_[at] != v) ++wrong_;
    }
  }

  [[nodiscard]] static std::uint64_t batch(std::int64_t i) {
    return static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL;
  }
  [[nodiscard]] int out_of_order() const noexcept { return out_of_order_.load(); }
  [[nodiscard]] int ran_twice() const noexcept { return ran_twice_.load(); }
  [[nodiscard]] int wrong() const noexcept { return wrong_; }

 private:
  [[nodiscard]] std::size_t slot(TaskIndex t, std::int64_t i) const noexcept {
    return static_cast<std::size_t>(i % ring) * graph_.size() + t;
  }
  // Whether (d, i) finished (its stamp says so; its value is then in values_).
  bool finished(TaskIndex d, std::int64_t i) const noexcept {
    return stamps_[slot(d, i)].load(std::memory_order_acquire) == i;
  }

  void body(TaskIndex t, const Ctx& ctx) noexcept {
    const std::int64_t i = ctx.iter_idx - ctx.first_iter;
    std::uint64_t v = swp::test::mix(t, ctx.batch);
    for (TaskIndex d : graph_.intra_deps(t)) {
      if (!finished(d, i)) ++out_of_order_;
      v = swp::test::mix(v, values_[slot(d, i)]);
    }
    if (i > 0) {
      if (!finished(t, i - 1)) ++out_of_order_;  // the lane edge
      for (TaskIndex d : graph_.inter_deps(t)) {
        if (!finished(d, i - 1)) ++out_of_order_;
        v = swp::test::mix(v, values_[slot(d, i - 1)]);
      }
    }
    const std::size_t at = slot(t, i);
    if (stamps_[at].load(std::memory_order_relaxed) == i) ++ran_twice_;
    values_[at] = v;
    stamps_[at].store(i, std::memory_order_release);
  }

  swp::PlanGraph graph_;
  std::int64_t suspend_every_;
  swp::Plan<Ctx> plan_;
  std::vector<std::atomic<std::int64_t>> stamps_;  // the iteration each (task, slot) holds
  std::vector<std::uint64_t> values_;
  std::vector<std::uint64_t> expected_;  // the serial values of the iteration checked last
  std::atomic<int> out_of_order_{0};
  std::atomic<int> ran_twice_{0};
  int wrong_ = 0;
  std::vector<std::thread> resumers_;
  std::mutex resumers_mutex_;
};

}  // namespace

TEST_CASE_TEMPLATE(
    "random plans of short tasks with a worker that takes none of them, then is free, run as "
    "the plan says",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The caller goes alone (AloneWindow) after every 32 retirements without help (thresholds
  // set so, for the sanitizers' builds too): the windows open, end by their count (1,024
  // admissions) or by a body that suspends, and open again, with the worker kept busy and
  // then free. Half the plans are driven by progress(), half by run(), whose loop of undriven
  // retirements lets the clock's periods retire and admit in one call while the window's
  // periods run uncounted (ClockRelease::open_periods), up to the window's last admission.
  // The runs last a fixed time, which no assertion depends on.
  const swp::test::ScopedAloneThresholds thresholds;
  using Clock = std::chrono::steady_clock;
  std::mt19937 rng(swp::test::seed(61));
  const swp::test::RandomPlanShape shape{.min_tasks = 2,
                                         .max_tasks = 6,
                                         .lanes = 1000,
                                         .ordered_probability = 0,
                                         .max_cpu_us = 0,
                                         .device_probability = 0};
  for (int n = 0; n < 4; ++n) {
    const swp::PipelinePlan source = swp::test::random_plan(rng, shape);
    const int max_depth = std::uniform_int_distribution<int>(1, 5)(rng);
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));
    ShortTasks tasks(source, n % 2 == 0 ? 0 : 3001);
    const bool by_run = n >= 2;
    CAPTURE(by_run);
    std::int64_t retired = 0, misordered = 0;
    {
      swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
      swp::test::BusyWorkers busy(rt.scheduler(), 1);
      const swp::test::BusyWorkers::ReleaseOnExit release(&busy);
      auto pipe = Engine::template make<Ctx>(rt, tasks.plan(), max_depth);
      pipe->set_timeouts({.retire = 20s});
      const Clock::time_point start = Clock::now();
      std::int64_t next = 0;
      bool freed = false;
      const auto source = [&]() -> std::optional<std::uint64_t> {
        if (next % 256 == 0) {
          const auto elapsed = Clock::now() - start;
          if (elapsed > 300ms) return std::nullopt;
          if (!freed && elapsed > 200ms) {
            busy.release();
            freed = true;
          }
        }
        return ShortTasks::batch(next++);
      };
      if (by_run) {
        pipe->on_retire([&](const Ctx& ctx) {
          if (ctx.iter_idx - ctx.first_iter != retired) ++misordered;
          tasks.retired(retired++);
        });
        pipe->run(source);
      } else {
        pipe->fill_pipeline(source);
        while (auto r = pipe->progress()) {
          if (r->iter() - r->context().first_iter != retired) ++misordered;
          tasks.retired(retired++);
        }
      }
      tasks.join_resumers();
    }
    CHECK(retired > 0);
    CHECK(misordered == 0);
    CHECK(tasks.out_of_order() == 0);
    CHECK(tasks.ran_twice() == 0);
    CHECK(tasks.wrong() == 0);
  }
}

}  // namespace test_pipeline_in_place
