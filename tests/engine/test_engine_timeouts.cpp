#include "swp/engine/engine_timeouts.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/plans.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sequencer.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_engine_timeouts {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

// First (lane a) awaits `never`, holding its submission turn; Second (lane b) is globally
// ordered after it.
swp::Plan<Ctx> ordered_pair(swp::Promise<>& never) {
  swp::Plan<Ctx> plan;
  plan.add("First", [&never](Ctx&) -> swp::Co<void> { co_await never.get_future(); },
           {.stage = 0, .thread_group = "a", .globally_ordered = true});
  plan.add("Second", [](Ctx&) {}, {.stage = 0, .thread_group = "b", .globally_ordered = true});
  return plan;
}

// Adds "Load" (scheduled as `schedule`), whose body awaits `never` in iteration 1: the
// iteration the hang reports below are about.
auto add_load_stuck_in_iteration_1(swp::Plan<Ctx>& plan, swp::Promise<>& never,
                                   swp::TaskSchedule schedule) {
  return plan.add(
      "Load",
      [&never](Ctx& ctx) -> swp::Co<void> {
        if (ctx.iter_idx == 1) co_await never.get_future();
      },
      schedule);
}

}  // namespace

TEST_CASE("the default deadlines are the seed's: 60 s retire, 30 s sequencer") {
  const swp::EngineTimeouts timeouts;
  CHECK(timeouts.retire == 60s);
  CHECK(timeouts.sequencer == 30s);
  CHECK(timeouts.check_interval == 50ms);
  CHECK(timeouts.drain == 60s);
  CHECK(timeouts.hang_report.empty());
  const swp::EngineTimeouts custom{.retire = 5s};
  CHECK(custom.retire == 5s);
  CHECK(custom.sequencer == 30s);
}

TEST_CASE_TEMPLATE("a check interval that is not positive is refused, naming it", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // 0 made next()'s periodic check fire once: its deadlines were never looked at again.
  swp::Runtime rt({.workers = 1});
  auto pipe = Engine::template make<Ctx>(rt, swp::test::make_plan({{"A", 0}}), 2);
  for (const auto interval : {0ms, -5ms}) {
    CAPTURE(interval.count());
    const swp::EngineTimeouts timeouts{.retire = 50ms, .check_interval = interval};
    CHECK_THROWS_WITH_AS(pipe->set_timeouts(timeouts),
                         doctest::Contains("EngineTimeouts::check_interval must be positive"),
                         std::invalid_argument);
  }
  pipe->set_timeouts({.retire = 50ms, .check_interval = 1ms});
  CHECK(pipe->run(std::vector<int>{1, 2}).iterations == 2);
}

TEST_CASE("the retire deadline ends a hang with PipelineTimeout after the configured time") {
  swp::Runtime rt({.workers = 1});
  swp::Promise<> never;  // what Load waits for in iteration 1; completed after the timeout
  swp::Plan<Ctx> plan;
  add_load_stuck_in_iteration_1(plan, never, {.stage = 0, .thread_group = "io"});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0, 1, 2});
  CHECK(swp::test::iter_of(pipe.progress()) == 0);
  const auto start = swp::Clock::now();
  CHECK_THROWS_WITH_AS(pipe.progress(), doctest::Contains("did not retire within 200 ms"),
                       swp::PipelineTimeout);
  CHECK(swp::Clock::now() - start >= 200ms);
  CHECK(swp::Clock::now() - start < 10s);
  never.set_value();
  CHECK(pipe.run(std::vector<int>{0}).iterations == 1);  // drained: it can run again
}

TEST_CASE("the sequencer deadline fails the instance waiting for its turn, naming it") {
  // The clock engine releases both ordered instances in period 0, so Second holds lane b
  // waiting for the turn First never passes on. (The data-flow engine releases an ordered
  // instance only once the one before it finished: there the retire deadline reports it.)
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;  // First holds turn 0 until cancelled
  const auto plan = ordered_pair(never);
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.set_timeouts({.retire = 20s, .sequencer = 100ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0});
  const auto start = swp::Clock::now();
  try {
    pipe.progress();
    FAIL("no timeout");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "Second");
    CHECK(e.iter() == 0);
    CHECK_THROWS_AS(std::rethrow_exception(e.nested()), swp::SequencerTimeout);
  }
  CHECK(swp::Clock::now() - start < 10s);
}

TEST_CASE("the sequencer deadline fails the run under FailurePolicy::skip too") {
  // A turn that never came holds back every later turn: skipping the iteration would not help.
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;
  const auto plan = ordered_pair(never);
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.set_failure_policy(swp::FailurePolicy::skip);
  pipe.set_timeouts({.retire = 20s, .sequencer = 100ms, .check_interval = 10ms});
  std::vector<std::int64_t> reported;
  pipe.on_failure([&](const Ctx& c, const std::exception_ptr&) { reported.push_back(c.iter_idx); });
  pipe.fill_pipeline(std::vector<int>{0, 1});
  CHECK_THROWS_AS(pipe.progress(), swp::TaskError);
  CHECK_FALSE(reported.empty());
  CHECK(reported.front() == 0);
  CHECK_THROWS_AS(pipe.progress(), swp::PipelineStateError);  // the run ended
}

TEST_CASE("data-flow: a hang behind a globally ordered task names the ordered task it waits for") {
  swp::Runtime rt({.workers = 1});
  swp::Promise<> never;  // First never finishes; Second is ordered after it
  const auto plan = ordered_pair(never);
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0});
  CHECK_THROWS_WITH_AS(
      pipe.progress(),
      doctest::Contains("Second (iter 0) on lane 'b', stream 'default': not released yet: waits for First (iter 0, globally ordered before it)"),
      swp::PipelineTimeout);
  never.set_value();
}

namespace {

std::string timeout_message(swp::Pipeline<Ctx>& pipe) {
  try {
    while (pipe.progress()) {
    }
  } catch (const swp::PipelineTimeout& e) {
    return e.what();
  }
  FAIL("no timeout");
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE("the hang report names each waiter's lane and stream and what holds it",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;  // what Load waits for in iteration 1; completed after the timeout
  swp::Plan<Ctx> plan;
  auto load = add_load_stuck_in_iteration_1(plan, never,
                                            {.stage = 0, .stream = "memcpy", .thread_group = "io"});
  plan.add("Post", [](Ctx&) {}, {.stage = 1, .stream = "memcpy", .thread_group = "io"});
  auto fwd = plan.add("Forward", [](Ctx&) {}, {.stage = 1, .stream = "gpu", .thread_group = "compute"});
  plan.intra_iter_deps = {{fwd, load}};
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe->fill_pipeline(std::vector<int>{0, 1, 2, 3});
  const std::string what = timeout_message(*pipe);
  CHECK(what.find("iteration 1 did not retire within 200 ms; unfinished:") != std::string::npos);
  CHECK(what.find("\n  Load (iter 1) on lane 'io', stream 'memcpy': its body is suspended in an "
                  "await") != std::string::npos);
  CHECK(what.find("\n  Post (iter 1) on lane 'io', stream 'memcpy': queued on its lane behind "
                  "Load (iter 1)") != std::string::npos);
  // The clock engine released Forward(1), which holds its lane; data-flow holds it back.
  const std::string forward = std::is_same_v<Engine, swp::test::UseClock>
                                  ? "holds its lane and waits for Load (iter 1)"
                                  : "not released yet: waits for Load (iter 1)";
  CHECK(what.find("\n  Forward (iter 1) on lane 'compute', stream 'gpu': " + forward) !=
        std::string::npos);
  never.set_value();
}

TEST_CASE("the clock's hang report names the producer a task alone on its lane waits for") {
  // Use is alone on its lane: the run claims the lane, and the period releases Use(1) while
  // Use(0) still runs. Once Use(0) finished, Use(1) holds its lane waiting for Load(1).
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;  // what Load waits for in iteration 1; completed after the timeout
  swp::Plan<Ctx> plan;
  auto load = add_load_stuck_in_iteration_1(plan, never, {.stage = 0, .thread_group = "io"});
  auto use = plan.add("Use", [](Ctx& ctx) {
    if (ctx.iter_idx == 0) std::this_thread::sleep_for(20ms);
  }, {.stage = 0, .thread_group = "compute"});
  plan.add("Tail", [](Ctx&) {}, {.stage = 1, .thread_group = "tail"});
  plan.intra_iter_deps = {{use, load}};
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0, 1, 2});
  const std::string what = timeout_message(pipe);
  CHECK(what.find("\n  Use (iter 1) on lane 'compute', stream 'default': holds its lane and "
                  "waits for Load (iter 1)") != std::string::npos);
  never.set_value();
}

TEST_CASE("the clock's hang report names the period an unreleased instance waits for") {
  // Two slots: period p opens once the iteration of period p - 2 retired. Load(1) never
  // completes, so period 3 (its gate: iteration 1) does not open, and Tail of iteration 2,
  // admitted in period 2, stays unreleased.
  swp::Runtime rt({.workers = 1});
  swp::Promise<> never;  // what Load waits for in iteration 1; completed after the timeout
  swp::Plan<Ctx> plan;
  add_load_stuck_in_iteration_1(plan, never, {.stage = 0, .thread_group = "io"});
  plan.add("Tail", [](Ctx&) {}, {.stage = 1, .thread_group = "tail"});
  auto pipe = swp::test::UseClock::make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe->fill_pipeline(std::vector<int>{0, 1, 2, 3});
  const std::string what = timeout_message(*pipe);
  CHECK_MESSAGE(what.find("\n  Tail (iter 2) on lane 'tail', stream 'default': not released yet "
                          "(its period 3 has not opened)") != std::string::npos,
                what);
  never.set_value();
}

TEST_CASE("the clock's hang report names a producer of the iteration before") {
  // Use(1) depends on Slow(0) (an inter-iteration dependency) and shares its lane: the
  // second period releases it as the lane's job, and it holds the lane waiting for Slow of
  // iteration 0 (a task alone on its lane is reported by the test above's path).
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;  // what Slow waits for in iteration 0; completed after the timeout
  swp::Plan<Ctx> plan;
  auto slow = plan.add("Slow", [&never](Ctx& ctx) -> swp::Co<void> {
    if (ctx.iter_idx == 0) co_await never.get_future();
  }, {.stage = 1, .thread_group = "slow"});
  plan.add("Other", [](Ctx&) {}, {.stage = 0, .thread_group = "compute"});
  auto use = plan.add("Use", [](Ctx&) {}, {.stage = 0, .thread_group = "compute"});
  plan.inter_iter_deps = {{use, slow}};
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0, 1, 2});
  const std::string what = timeout_message(pipe);
  CHECK(what.find("\n  Use (iter 1) on lane 'compute', stream 'default': holds its lane and "
                  "waits for Slow (iter 0)") != std::string::npos);
  never.set_value();
}

TEST_CASE("the hang report names the instance holding the sequencer turn a waiter needs") {
  swp::Runtime rt({.workers = 2});
  swp::Promise<> never;  // First holds turn 0 until cancelled
  const auto plan = ordered_pair(never);
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.set_timeouts({.retire = 200ms, .sequencer = 30s, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0});
  CHECK(timeout_message(pipe).find("\n  Second (iter 0) on lane 'b', stream 'default': waits for "
                                   "submission turn 1 (sequencer at turn 0, held by First (iter "
                                   "0))") != std::string::npos);
  never.set_value();
}

TEST_CASE_TEMPLATE("a slot deadline names the device work the slot waits for", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Host time: iteration 0's device work takes 1 s, far past a 20 ms deadline.
  swp::Runtime rt({.backend = swp::Backend::host});
  swp::Plan<Ctx> plan;
  plan.add("Heavy", [](Ctx&, swp::TaskScope& scope) { scope.device_work(1s); },
           {.stage = 0, .stream = "gpu"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 1);
  pipe->set_timeouts({.retire = 20ms, .check_interval = 5ms});
  pipe->fill_pipeline(std::vector<int>{0, 1});
  const std::string what = timeout_message(*pipe);
  CHECK(what.find("device work of iteration 0 did not complete within 20 ms, so iteration 1 "
                  "cannot have its slot; device work not complete:\n  Heavy (iter 0) on stream "
                  "'gpu': its device work has not completed") != std::string::npos);
}

TEST_CASE_TEMPLATE("on sim the deadlines do not apply to modelled time: a long model runs", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // 1000 s of device work per iteration and 200 s of CPU time, against 60 s deadlines: a valid
  // model, which failed ("did not retire within 60000 ms") and, past about 120 s, lost the
  // cause of its failure in "could not drain".
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("Heavy", [](Ctx&, swp::TaskScope& scope) { scope.device_work(1000s); },
           {.stage = 0, .stream = "gpu"});
  plan.add("Slow", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(200s);
  }, {.stage = 1});
  plan.intra_iter_deps.push_back({"Slow", "Heavy"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  const auto stats = pipe->run(std::vector<int>{0, 1, 2});
  CHECK(stats.iterations == 3);
  CHECK(stats.elapsed >= 3000s);  // the device work of three iterations, one after another
}

TEST_CASE("the hang report is also written to the file EngineTimeouts::hang_report names") {
  // Spin's lane has a thread of its own, so that the caller does not run it while it helps.
  swp::Runtime rt({.workers = 2, .dedicated_lanes = {"cpu"}});
  const swp::test::TempFile report("", ".txt");
  std::filesystem::remove(report.path());
  // Spin runs its body (no await) until the report exists: the report catches it running.
  swp::Plan<Ctx> plan;
  plan.add("Spin", [&report](Ctx&) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (!std::filesystem::exists(report.path()) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(1ms);
  }, {.stage = 0, .thread_group = "cpu"});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms, .hang_report = report.str()});
  pipe.fill_pipeline(std::vector<int>{0});
  const std::string what = timeout_message(pipe);
  const std::string text = swp::test::read_text(report.path());
  const std::string line = "\n  Spin (iter 0) on lane 'cpu', stream 'default': is running its body";
  CHECK(text.find("swp hang report (process ") == 0);
  CHECK(text.find("iteration 0 did not retire within 200 ms; unfinished:" + line) !=
        std::string::npos);
  CHECK(what.find(line) != std::string::npos);
}

TEST_CASE("the hang report goes to $SWP_HANG_REPORT, and a report that cannot be written says so") {
  swp::Promise<> never;
  swp::Plan<Ctx> plan;
  plan.add("Stuck", [&never](Ctx&) -> swp::Co<void> { co_await never.get_future(); });
  const swp::test::TempFile report("", ".txt");
  SUBCASE("environment") {
    ::setenv("SWP_HANG_REPORT", report.str().c_str(), 1);
    {
      swp::Runtime rt({.backend = swp::Backend::sim});
      swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
      pipe.fill_pipeline(std::vector<int>{0});
      const std::string what = timeout_message(pipe);
      CHECK(what.find("Stuck (iter 0)") != std::string::npos);
      CHECK(swp::test::read_text(report.path()).find(what) != std::string::npos);
    }
    ::unsetenv("SWP_HANG_REPORT");
  }
  SUBCASE("unwritable") {
    swp::Runtime rt({.backend = swp::Backend::sim});
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
    const std::string bad = (report.path() / "no-such-dir" / "report.txt").string();
    pipe.set_timeouts({.hang_report = bad});
    pipe.fill_pipeline(std::vector<int>{0});
    CHECK(timeout_message(pipe).find("(the hang report could not be written to '" + bad + "')") !=
          std::string::npos);
  }
}

}  // namespace test_engine_timeouts
