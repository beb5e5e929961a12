#include "swp/engine/engine_timeouts.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swp/async/future.hpp"
#include "swp/async/sequencer.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

}  // namespace

TEST_CASE("the default deadlines are the seed's: 60 s retire, 30 s sequencer") {
  const swp::EngineTimeouts timeouts;
  CHECK(timeouts.retire == 60s);
  CHECK(timeouts.sequencer == 30s);
  CHECK(timeouts.check_interval == 50ms);
  CHECK(timeouts.drain == 60s);
  const swp::EngineTimeouts custom{.retire = 5s};
  CHECK(custom.retire == 5s);
  CHECK(custom.sequencer == 30s);
}

TEST_CASE("the retire deadline ends a hang with PipelineTimeout after the configured time") {
  swp::Runtime rt({.workers = 1});
  swp::Promise<> never;  // what Load waits for in iteration 1; completed after the timeout
  swp::Plan<Ctx> plan;
  plan.add("Load", [&never](Ctx& ctx) -> swp::Co<void> {
    if (ctx.iter_idx == 1) co_await never.get_future();
  }, {.stage = 0, .thread_group = "io"});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0, 1, 2});
  CHECK(pipe.progress() == 0);
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
  swp::Plan<Ctx> plan;
  plan.add("First", [&never](Ctx&) -> swp::Co<void> { co_await never.get_future(); },
           {.stage = 0, .thread_group = "a", .globally_ordered = true});
  plan.add("Second", [](Ctx&) {}, {.stage = 0, .thread_group = "b", .globally_ordered = true});
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

TEST_CASE("data-flow: a hang behind a globally ordered task names the ordered task it waits for") {
  swp::Runtime rt({.workers = 1});
  swp::Promise<> never;  // First never finishes; Second is ordered after it
  swp::Plan<Ctx> plan;
  plan.add("First", [&never](Ctx&) -> swp::Co<void> { co_await never.get_future(); },
           {.stage = 0, .thread_group = "a", .globally_ordered = true});
  plan.add("Second", [](Ctx&) {}, {.stage = 0, .thread_group = "b", .globally_ordered = true});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  pipe.set_timeouts({.retire = 200ms, .check_interval = 10ms});
  pipe.fill_pipeline(std::vector<int>{0});
  CHECK_THROWS_WITH_AS(
      pipe.progress(),
      doctest::Contains("Second (iter 0) on lane 'b': not released yet: waits for First (iter 0, globally ordered before it)"),
      swp::PipelineTimeout);
  never.set_value();
}
