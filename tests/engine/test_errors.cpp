#include "swp/engine/errors.hpp"

#include <doctest/doctest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/random_plans.hpp"
#include "support/run_trace.hpp"
#include "swp/engine/pipeline.hpp"

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// A random plan whose task `victim` throws in iteration `bad_iter`.
swp::Plan<Ctx> with_failure(const swp::PipelinePlan& source, std::size_t victim, int bad_iter) {
  swp::Plan<Ctx> plan;
  for (std::size_t t = 0; t < source.tasks.size(); ++t) {
    const auto& planned = source.tasks[t];
    plan.add(planned.task.name,
             [t, victim, bad_iter](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
               co_await scope.cpu_work(2us);
               scope.device_work(5us);
               if (t == victim && ctx.batch == bad_iter)
                 throw std::runtime_error("bad batch " + std::to_string(ctx.batch));
             },
             planned.schedule);
  }
  plan.intra_iter_deps = source.intra_iter_deps;
  plan.inter_iter_deps = source.inter_iter_deps;
  return plan;
}

}  // namespace

TEST_CASE("TaskError names the task and the iteration and keeps the cause") {
  const swp::TaskError e("Forward", 7, std::make_exception_ptr(std::runtime_error("nan loss")));
  CHECK(std::string(e.what()) == "task 'Forward' failed in iteration 7: nan loss");
  CHECK(e.task() == "Forward");
  CHECK(e.iter() == 7);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(e.nested()), "nan loss", std::runtime_error);
}

TEST_CASE_TEMPLATE("an exception at a random (task, iteration) surfaces, drains and allows a refill",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  std::mt19937 rng(99);
  for (int round = 0; round < 40; ++round) {
    const auto source = swp::test::random_plan(rng);
    const std::size_t victim = std::uniform_int_distribution<std::size_t>(0, source.tasks.size() - 1)(rng);
    const int bad_iter = std::uniform_int_distribution<int>(0, 7)(rng);
    CAPTURE(round);
    const auto backend = round % 2 == 0 ? swp::Backend::host : swp::Backend::sim;
    swp::Runtime rt({.backend = backend, .workers = 2});
    auto plan = with_failure(source, victim, bad_iter);
    auto pipe = Engine::template make<Ctx>(rt, plan, 3);
    pipe->set_timeouts({.retire = 20s});
    swp::test::RunTrace trace;
    pipe->set_observer(&trace);

    const auto batches = iota(8);
    pipe->fill_pipeline(batches);
    std::int64_t last = -1;
    try {
      while (auto i = pipe->progress()) last = *i;
      FAIL("the failure did not surface");
    } catch (const swp::TaskError& e) {
      CHECK(e.task() == source.tasks[victim].task.name);
      CHECK(e.iter() == bad_iter);
      CHECK(std::string(e.what()).find("bad batch " + std::to_string(bad_iter)) != std::string::npos);
    }
    CHECK(last < bad_iter);
    // Drained: every instance that started also finished.
    for (const auto& [key, cpu] : trace.cpu()) CHECK(cpu.finished != 0);
    // The same pipeline runs again, this time over data that does not fail.
    const auto good = std::vector<int>{100, 101, 102};
    auto retired = 0;
    pipe->fill_pipeline(good);
    while (pipe->progress()) ++retired;
    CHECK(retired == 3);
  }
}

TEST_CASE_TEMPLATE("a stuck task times out with every waiter named, then the pipeline refills",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    swp::Promise<> never;  // what "Load" waits for in iteration 1; nobody completes it
    swp::Plan<Ctx> plan;
    auto load = plan.add("Load", [&never](Ctx& ctx) -> swp::Co<void> {
      if (ctx.iter_idx == 1) co_await never.get_future();
    }, {.stage = 0, .thread_group = "io"});
    auto fwd = plan.add("Forward", [](Ctx&) {}, {.stage = 1, .thread_group = "compute"});
    plan.intra_iter_deps = {{fwd, load}};
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    pipe->set_timeouts({.retire = 2s, .sequencer = 30s, .check_interval = 20ms});
    const auto batches = iota(4);
    pipe->fill_pipeline(batches);
    REQUIRE(pipe->progress() == 0);
    try {
      pipe->progress();
      FAIL("no timeout");
    } catch (const swp::PipelineTimeout& e) {
      const std::string what = e.what();
      CHECK(what.find("iteration 1") != std::string::npos);
      CHECK(what.find("Load (iter 1) on lane 'io': is running its body") != std::string::npos);
      // The clock engine released Forward(1), which waits; the data-flow engine holds it back.
      CHECK(what.find("Forward (iter 1) on lane 'compute': ") != std::string::npos);
      CHECK(what.find("waits for Load (iter 1)") != std::string::npos);
      if (backend == swp::Backend::sim) CHECK(what.find("deadlock") != std::string::npos);
    }
    // The stuck await was cancelled, so the pipeline drained and can run again.
    never.set_value();
    int retired = 0;
    pipe->fill_pipeline(std::vector<int>{0});
    while (pipe->progress()) ++retired;
    CHECK(retired == 1);
  }
}
