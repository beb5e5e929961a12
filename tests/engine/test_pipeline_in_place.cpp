// Every task alone on its lane: the runs that keep no join counters (one thread: data-flow's
// whole iterations in place, the clock's uncounted periods; with workers: data-flow's offered
// iterations) and their hand-overs to the general path match a serial run.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/bound_plans.hpp"
#include "support/drive.hpp"
#include "support/engines.hpp"
#include "support/random_plans.hpp"
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

// A body that suspends until another thread resumes it (through its lane), about 50 µs later.
swp::Co<void> resumed_by_another_thread(std::vector<std::thread>& threads, std::mutex& mutex) {
  swp::Promise<> promise;
  swp::Future<> resumed = promise.get_future();
  {
    std::lock_guard lock(mutex);
    threads.emplace_back([promise]() mutable {
      std::this_thread::sleep_for(50us);
      promise.set_value();
    });
  }
  co_await resumed;
}

// The values a serial run of `source` gives: what a run with threads must match.
template <class Engine, class Batches>
void run_serially(const swp::PipelinePlan& source, int max_depth, const Batches& batches,
                  Results& out) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  auto plan = bind(source, out);
  Engine::template make<Ctx>(rt, plan, max_depth)->run_serial(batches);
}

// Every task alone on its lane, not globally ordered, the caller the only thread, no observer:
// data-flow runs each admitted iteration whole in place (EngineCore::run_iteration_here), and
// hands the rest of an iteration to its general path when a body suspends (here: resumed by
// another thread) or uses its stream. Each body checks, as it ends, that what it waits for ran
// before it: its producers in the iteration and in the one before, and its task's instance of
// the iteration before (its lane edge). The values must match a serial run's.
// `second_driver`: another thread drives the same pool meanwhile (as a second pipeline's
// progress() would), so it may run what the first posts: the continuation of a suspended body
// among it, possibly while the caller is still handing that body's iteration over.
// `workers`: the pool's workers besides the caller (data-flow offers each iteration it runs in
// place, EngineCore::run_iteration_offered); `stall_probability`: a body stalls for 300 µs,
// past a worker's patience, so that the worker takes the rest of its iteration over.
template <class Engine>
void run_alone_on_lanes(int plans, std::uint32_t seed, Drive drive, double suspend_probability,
                        double device_probability, bool second_driver = false,
                        unsigned workers = 0, double stall_probability = 0,
                        int max_iterations = 40) {
  std::mt19937 rng(swp::test::seed(seed));
  const swp::test::RandomPlanShape shape{.lanes = 1000,
                                         .ordered_probability = 0,
                                         .max_device_us = 3,
                                         .max_cpu_us = 2,
                                         .device_probability = device_probability};
  for (int n = 0; n < plans; ++n) {
    // Members by name, not a structured binding: clang 14 cannot capture a binding in a
    // lambda (CAPTURE makes one).
    const swp::test::RandomRun drawn = swp::test::random_run(rng, max_iterations, shape);
    const auto& source = drawn.source;
    const auto& graph = drawn.graph;
    const auto iterations = drawn.iterations;
    const auto max_depth = drawn.max_depth;
    const auto& batches = drawn.batches;
    std::set<std::pair<TaskIndex, std::int64_t>> suspending, stalling;
    for (std::int64_t i = 0; i < iterations; ++i) {
      for (TaskIndex t = 0; t < graph.size(); ++t) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < suspend_probability)
          suspending.insert({t, i});
        if (std::uniform_real_distribution<double>(0, 1)(rng) < stall_probability)
          stalling.insert({t, i});
      }
    }
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));

    Results serial_results;
    run_serially<Engine>(source, max_depth, batches, serial_results);
    // The lane edge (a task's instance waits for its instance before) holds for a task alone
    // on its lane; with 1000 lane names a plan rarely puts two on one, whose lane then keeps
    // the release order only.
    std::map<std::string, int> on_lane;
    for (TaskIndex t = 0; t < graph.size(); ++t) ++on_lane[std::string(graph.lane(t))];
    Results results;
    std::atomic<int> out_of_order{0};
    std::vector<std::thread> resumers;
    std::mutex resumers_mutex;
    const swp::test::BodyHook hook = [&](TaskIndex t, std::int64_t i) -> swp::Co<void> {
      {
        std::lock_guard lock(results.mutex);
        const auto ran = [&](TaskIndex d, std::int64_t at) { return results.value.contains({d, at}); };
        for (TaskIndex d : graph.intra_deps(t))
          if (!ran(d, i)) ++out_of_order;
        if (i > 0) {
          for (TaskIndex d : graph.inter_deps(t))
            if (!ran(d, i - 1)) ++out_of_order;
          if (on_lane.at(std::string(graph.lane(t))) == 1 && !ran(t, i - 1)) ++out_of_order;
        }
      }
      if (stalling.contains({t, i})) std::this_thread::sleep_for(300us);
      if (suspending.contains({t, i})) return resumed_by_another_thread(resumers, resumers_mutex);
      return {};
    };
    {
      swp::Runtime rt({.backend = swp::Backend::host, .workers = workers});
      auto plan = bind(source, results, {~TaskIndex{0}, -1}, &hook);
      auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
      pipe->set_timeouts({.retire = 20s});
      std::vector<std::int64_t> retired;
      std::atomic<bool> done{false};
      std::thread driver;
      if (second_driver)
        driver = std::thread([&] {
          while (!done.load())
            rt.scheduler().drive_until([&] { return done.load(); },
                                       swp::Clock::now() + 1ms);
        });
      pipe->fill_pipeline(batches);
      if (drive == Drive::next) {
        retired = swp::sync_wait(next_all(*pipe));
      } else {
        while (auto i = pipe->progress()) retired.push_back(i->iter());
      }
      done.store(true);
      rt.scheduler().notify();
      if (driver.joinable()) driver.join();
      std::vector<std::int64_t> expected(static_cast<std::size_t>(iterations));
      for (std::int64_t i = 0; i < iterations; ++i) expected[static_cast<std::size_t>(i)] = i;
      CHECK(retired == expected);
      pipe->drain();
      pipe->synchronize();
      // A resumer may still be inside the post that resumed its body: joined before the
      // runtime goes.
      for (std::thread& resumer : resumers) resumer.join();
    }
    CHECK(out_of_order.load() == 0);
    CHECK(results.value == serial_results.value);
    for (const auto& [key, runs] : results.runs) CHECK(runs == 1);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("with the caller the only thread and every task alone on its lane, the "
                   "iterations match a serial run",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("bodies that complete at once") {
    run_alone_on_lanes<Engine>(60, 41, Drive::progress, 0, 0);
  }
  SUBCASE("some bodies resumed by another thread") {
    run_alone_on_lanes<Engine>(40, 43, Drive::progress, 0.05, 0);
  }
  SUBCASE("device work") { run_alone_on_lanes<Engine>(40, 47, Drive::progress, 0.02, 0.2); }
  SUBCASE("co_await next()") { run_alone_on_lanes<Engine>(30, 53, Drive::next, 0.05, 0); }
  SUBCASE("bodies resumed by another thread, which a second thread driving the pool may run") {
    run_alone_on_lanes<Engine>(30, 59, Drive::progress, 0.1, 0, true);
  }
}

TEST_CASE_TEMPLATE("with a worker and every task alone on its lane, iterations run in place "
                   "and taken over midway match a serial run",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Data-flow runs each iteration whose predecessor completed in place on the caller, offered
  // to the worker (EngineCore::run_iteration_offered); the clock runs each batch of a period's
  // releases so (ClockRelease::run_batch). A body that stalls makes the worker take the rest
  // over at the caller's position (InPlaceOffer).
  SUBCASE("bodies that stall now and then") {
    run_alone_on_lanes<Engine>(40, 61, Drive::progress, 0, 0, false, 1, 0.05);
  }
  SUBCASE("stalls, bodies resumed by another thread, device work") {
    run_alone_on_lanes<Engine>(30, 67, Drive::progress, 0.05, 0.1, false, 1, 0.05);
  }
  SUBCASE("stalls, with a second thread driving the pool") {
    run_alone_on_lanes<Engine>(30, 71, Drive::progress, 0.05, 0, true, 1, 0.05);
  }
  SUBCASE("bodies that complete at once, two workers") {
    run_alone_on_lanes<Engine>(40, 73, Drive::progress, 0, 0, false, 2, 0);
  }
  SUBCASE("long runs with rare stalls: runs that count after a hand-over go back to uncounted") {
    // (The clock: after a hand-over its periods count for at least 64 calls, then go back once
    // everything released finished; data-flow offers again after its backoff.)
    run_alone_on_lanes<Engine>(8, 79, Drive::progress, 0, 0, false, 1, 0.002, 600);
  }
}


TEST_CASE_TEMPLATE("more pipelines than the pool watches, driven in turns by one thread, each "
                   "match a serial run",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // A pool watches at most max_watched in-place offers (RunQueueHooks::watch): the pipelines past
  // that run the general way. Driven in turns, each pipeline's caller is away while the others
  // make progress, so a worker takes a watched offer from an owner between runs (and finds
  // none to take over), and the owner offers it again at its next run; a body stalls now and
  // then, past the worker's patience, for takes in the middle of a run.
  constexpr int pipelines = static_cast<int>(swp::ThreadPoolScheduler::max_watched) + 4;
  std::mt19937 rng(swp::test::seed(83));
  const swp::test::RandomPlanShape shape{.lanes = 1000, .ordered_probability = 0,
                                         .max_device_us = 0, .max_cpu_us = 0,
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

}  // namespace test_pipeline_in_place
