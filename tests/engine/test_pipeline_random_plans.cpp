// Random valid plans against both engines: every dependency is honoured on the CPU and the
// device, and the results match a serial run's, on every backend and way of driving; after a
// failure the pipeline refills and runs like a serial run.

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "support/bound_plans.hpp"
#include "support/checked_runs.hpp"
#include "support/drive.hpp"
#include "support/engines.hpp"
#include "support/random_plans.hpp"
#include "support/run_trace.hpp"
#include "support/seed.hpp"
#include "swp/async/asio_scheduler.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_random_plans {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;
using swp::TaskIndex;

using swp::test::bind;
using swp::test::Results;

// Every dependency, transitively, ordered on the CPU (finish before start) and on the device
// (end before start, for tasks that did device work), in a run of iterations first, first + 1,
// ... (first has no iteration before it).
void check_dependencies(const swp::PlanGraph& g, const swp::test::RunTrace& trace,
                        std::int64_t iterations, std::int64_t first = 0) {
  const auto cpu = trace.cpu();
  const auto device = trace.device();
  using Key = swp::test::RunTrace::Key;
  auto preds = [&](Key k) {
    std::vector<Key> out;
    for (TaskIndex d : g.intra_deps(k.first)) out.push_back({d, k.second});
    if (k.second > first)
      for (TaskIndex d : g.inter_deps(k.first)) out.push_back({d, k.second - 1});
    return out;
  };
  for (std::int64_t i = first; i < first + iterations; ++i) {
    for (TaskIndex t = 0; t < g.size(); ++t) {
      const Key me{t, i};
      REQUIRE(cpu.contains(me));
      for (Key p : preds(me)) {
        REQUIRE(cpu.contains(p));
        CHECK_MESSAGE(cpu.at(p).finished < cpu.at(me).started, g.name(t), " iter ", i,
                      " started before its dependency ", g.name(p.first), " iter ", p.second,
                      " finished");
      }
      if (!device.contains(me)) continue;
      // Transitive predecessors that did device work must end before this work starts.
      std::set<Key> seen;
      std::vector<Key> stack = preds(me);
      while (!stack.empty()) {
        Key p = stack.back();
        stack.pop_back();
        if (!seen.insert(p).second) continue;
        if (device.contains(p))
          CHECK_MESSAGE(device.at(p).end <= device.at(me).start, g.name(t), " iter ", i,
                        " device work started before ", g.name(p.first), " iter ", p.second,
                        " ended");
        for (Key q : preds(p)) stack.push_back(q);
      }
    }
  }
  // Lanes are FIFO: instances start in the order they were released, one at a time.
  const auto released = trace.released();
  const auto started = trace.started();
  for (const auto& [lane, order] : released) CHECK(started.at(lane) == order);
  for (const auto& [key, c] : cpu) {
    for (const auto& [other, d] : cpu) {
      if (key == other || c.lane != d.lane) continue;
      CHECK_FALSE((c.started < d.started && d.started < c.finished));
    }
  }
}

using swp::test::Drive;
using swp::test::next_all;

using swp::test::async_all;

std::unique_ptr<swp::Runtime> make_runtime(swp::Backend backend, Drive drive,
                                           boost::asio::io_context& io, unsigned workers) {
  if (drive == Drive::asio)
    return std::make_unique<swp::Runtime>(std::make_unique<swp::AsioScheduler>(io.get_executor()));
  return std::make_unique<swp::Runtime>(
      swp::RuntimeOptions{.backend = backend, .workers = workers});
}

template <class Engine>
void run_random_plans(swp::Backend backend, int plans, std::uint32_t seed,
                      Drive drive = Drive::progress, int max_iterations = 12,
                      unsigned workers = 2, const swp::test::RandomPlanShape& shape = {}) {
  std::mt19937 rng(swp::test::seed(seed));
  for (int n = 0; n < plans; ++n) {
    // Members by name, not a structured binding: clang 14 cannot capture a binding in a
    // lambda (CAPTURE makes one).
    const swp::test::RandomRun drawn = swp::test::random_run(rng, max_iterations, shape);
    const auto& source = drawn.source;
    const auto& graph = drawn.graph;
    const auto iterations = drawn.iterations;
    const auto max_depth = drawn.max_depth;
    const auto& batches = drawn.batches;
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));

    Results serial_results;
    {
      swp::Runtime rt({.backend = backend, .workers = 2});
      auto plan = bind(source, serial_results);
      auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
      pipe->run_serial(batches);
    }
    Results results;
    swp::test::RunTrace trace;
    boost::asio::io_context io;
    auto runtime = make_runtime(backend, drive, io, workers);
    swp::Runtime& rt = *runtime;
    auto plan = bind(source, results);
    auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
    pipe->set_observer(&trace);
    pipe->set_timeouts({.retire = 20s});
    for (TaskIndex t = 0; t < graph.size(); ++t) trace.attach(rt.stream(graph.stream(t)));
    std::vector<std::int64_t> retired;
    pipe->fill_pipeline(batches);
    if (drive == Drive::progress) {
      while (auto i = pipe->progress()) retired.push_back(i->iter());
    } else if (drive == Drive::next) {
      retired = swp::sync_wait(next_all(*pipe));
    } else {
      retired = async_all(*pipe, io);
    }
    std::vector<std::int64_t> expected(static_cast<std::size_t>(iterations));
    for (std::int64_t i = 0; i < iterations; ++i) expected[static_cast<std::size_t>(i)] = i;
    CHECK(retired == expected);
    pipe->drain();
    for (TaskIndex t = 0; t < graph.size(); ++t) rt.stream(graph.stream(t)).synchronize();
    check_dependencies(graph, trace, iterations);
    CHECK(results.value == serial_results.value);
    for (const auto& [key, runs] : results.runs) CHECK(runs == 1);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("random valid plans honour every dependency and match a serial run", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("host backend, real threads") { run_random_plans<Engine>(swp::Backend::host, 120, 7); }
  SUBCASE("host backend, the caller the only thread") {
    // No workers: the clock engine runs a period's ready instances as it releases them
    // (detail::sole_runner_here), data-flow an admission's as the admission ends
    // (RunQueueHooks::RunHere), both often without a driving section.
    run_random_plans<Engine>(swp::Backend::host, 120, 23, Drive::progress, 12, 0);
  }
  SUBCASE("host backend, the caller the only thread, no device work") {
    // Data-flow runs an admission's ready instances in place only until a task uses its
    // stream: without device work, every admission of the run does.
    run_random_plans<Engine>(swp::Backend::host, 80, 31, Drive::progress, 12, 0,
                             {.device_probability = 0});
  }
  SUBCASE("host backend, the caller the only thread, co_await next()") {
    run_random_plans<Engine>(swp::Backend::host, 60, 29, Drive::next, 12, 0);
  }
  SUBCASE("sim backend") { run_random_plans<Engine>(swp::Backend::sim, 120, 11); }
  SUBCASE("host backend, co_await next()") {
    run_random_plans<Engine>(swp::Backend::host, 60, 13, Drive::next);
  }
  SUBCASE("sim backend, co_await next()") {
    run_random_plans<Engine>(swp::Backend::sim, 30, 17, Drive::next);
  }
  SUBCASE("lanes on a caller's io_context, async_progress") {
    run_random_plans<Engine>(swp::Backend::host, 60, 19, Drive::asio);
  }
  // Each (task, sync entry) join counter is re-armed when consumed and serves every
  // (slots + 1)-th iteration: long runs wrap every entry many times.
  SUBCASE("long runs, sim") { run_random_plans<Engine>(swp::Backend::sim, 12, 23, Drive::progress, 300); }
  SUBCASE("long runs, host") { run_random_plans<Engine>(swp::Backend::host, 12, 29, Drive::progress, 200); }
}

namespace {

// A random plan fails at a random (task, iteration); the error names them, and the pipeline,
// filled again, runs the iterations before the failure exactly like a serial run: the join
// counters left half-consumed by the failed run are re-armed.
template <class Engine>
void fail_then_refill(swp::Backend backend, int plans, std::uint32_t seed) {
  std::mt19937 rng(swp::test::seed(seed));
  for (int n = 0; n < plans; ++n) {
    const auto source = swp::test::random_plan(rng);
    const auto graph = swp::validate(source);
    const int iterations = std::uniform_int_distribution<int>(2, 24)(rng);
    const int max_depth = std::uniform_int_distribution<int>(1, 5)(rng);
    const auto fail_task = static_cast<TaskIndex>(
        std::uniform_int_distribution<std::size_t>(0, graph.size() - 1)(rng));
    const std::int64_t fail_iter = std::uniform_int_distribution<int>(1, iterations - 1)(rng);
    std::vector<std::uint64_t> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(rng());
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));
    CAPTURE(fail_task);
    CAPTURE(fail_iter);

    Results serial_results;
    {
      swp::Runtime rt({.backend = backend, .workers = 2});
      auto plan = bind(source, serial_results);
      auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
      pipe->run_serial(batches);
    }
    swp::Runtime rt({.backend = backend, .workers = 2});
    Results results;
    auto plan = bind(source, results, {fail_task, fail_iter});
    auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
    pipe->set_timeouts({.retire = 20s});
    pipe->fill_pipeline(batches);
    try {
      while (pipe->progress()) {
      }
      FAIL("the injected error did not surface");
    } catch (const swp::TaskError& e) {
      CHECK(e.task() == graph.name(fail_task));
      CHECK(e.iter() == fail_iter);
    }
    {
      std::lock_guard lock(results.mutex);
      results.value.clear();
      results.runs.clear();
    }
    // The failed run's device work may still be queued: streams read their observer.
    pipe->synchronize();
    swp::test::RunTrace trace;
    pipe->set_observer(&trace);
    for (TaskIndex t = 0; t < graph.size(); ++t) trace.attach(rt.stream(graph.stream(t)));
    const std::vector<std::uint64_t> before(batches.begin(), batches.begin() + fail_iter);
    // Numbered on after the failed run's iterations.
    const std::int64_t first = pipe->next_iteration();
    CHECK(first > fail_iter);
    std::int64_t retired = 0;
    pipe->fill_pipeline(before);
    while (auto i = pipe->progress()) CHECK(i->iter() == first + retired++);
    CHECK(retired == fail_iter);
    pipe->drain();
    pipe->synchronize();
    check_dependencies(graph, trace, fail_iter, first);
    for (const auto& [key, runs] : results.runs) CHECK(runs == 1);
    for (const auto& [key, value] : results.value) CHECK(value == serial_results.value.at(key));
    CHECK(results.value.size() == graph.size() * static_cast<std::size_t>(fail_iter));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("after a failure the pipeline refills and runs like a serial run", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("sim backend") { fail_then_refill<Engine>(swp::Backend::sim, 60, 31); }
  SUBCASE("host backend") { fail_then_refill<Engine>(swp::Backend::host, 40, 37); }
}

}  // namespace test_pipeline_random_plans
