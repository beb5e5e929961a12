#include "swp/engine/run_observer.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/plan.hpp"

namespace test_run_observer {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

// Counts what a run tells it.
struct Counting final : swp::RunObserver {
  std::atomic<int> runs{0}, finished_runs{0}, started{0}, device{0};
  void run_starting(swp::Runtime&, const swp::PlanGraph&) override { ++runs; }
  void run_finished() noexcept override { ++finished_runs; }
  void task_released(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
  void task_started(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {
    ++started;
  }
  void task_finished(swp::TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override {}
  void device_work(const swp::Stream&, const swp::DeviceWork&) noexcept override { ++device; }
};

// One task queueing device work on `stream`.
swp::Plan<Ctx> one_task(const std::string& name, const std::string& stream) {
  swp::Plan<Ctx> plan;
  plan.add(name, [](Ctx&, swp::TaskScope& scope) { scope.device_work(5us); },
           {.stream = stream});
  return plan;
}

}  // namespace

TEST_CASE(
    "a second observer attached to a pipeline on the same runtime is refused, naming the "
    "stream both would use, and changes nothing") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  // Two pipelines of one runtime: their "compute" stream is one stream.
  auto train = swp::test::UseClock::make<Ctx>(rt, one_task("Train", "compute"));
  auto eval = swp::test::UseClock::make<Ctx>(rt, one_task("Eval", "compute"));
  Counting trace, metrics;
  swp::attach_run_observer(trace, *train);
  swp::attach_run_observer(trace, *train);  // the same observer again: fine
  try {
    swp::attach_run_observer(metrics, *eval);
    FAIL("attaching a second observer must not replace the first on the shared streams");
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("stream 'compute'") != std::string::npos);
    CHECK(what.find("Counting at ") != std::string::npos);
    CHECK(what.find("detach") != std::string::npos);
  }
  CHECK(metrics.runs == 0);  // refused before run_starting
  CHECK(rt.stream("compute").observer() == &trace);
  CHECK(rt.stream("default").observer() == &trace);

  eval->run(std::vector<int>{0, 1});  // not observed by `metrics`
  CHECK(metrics.started == 0);
  CHECK(metrics.device == 0);
  train->run(std::vector<int>{0, 1, 2});
  swp::detach_run_observer(trace, *train);
  CHECK(trace.started == 3);
  CHECK(trace.device == 3 + 2);  // eval's device work went to the stream's one observer
  CHECK(trace.finished_runs == 1);
  CHECK(rt.stream("compute").observer() == nullptr);

  // Once the first is detached the second may come.
  swp::attach_run_observer(metrics, *eval);
  eval->run(std::vector<int>{0, 1});
  swp::detach_run_observer(metrics, *eval);
  CHECK(metrics.started == 2);
  CHECK(metrics.device == 2);
}

TEST_CASE("detaching leaves a stream that reports to another observer by then alone") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseDataFlow::make<Ctx>(rt, one_task("Load", "memcpy"));
  Counting mine, theirs;
  swp::attach_run_observer(mine, *pipe);
  pipe->run(std::vector<int>{0});
  // Someone took the memcpy stream over meanwhile (detaching ours first, as they must).
  rt.stream("memcpy").set_observer(nullptr);
  rt.stream("memcpy").set_observer(&theirs);
  swp::detach_run_observer(mine, *pipe);
  CHECK(rt.stream("memcpy").observer() == &theirs);
  CHECK(rt.stream("default").observer() == nullptr);
  CHECK(mine.device == 1);
  CHECK(mine.finished_runs == 1);
}

TEST_CASE("attaching an observer mid-run is refused before run_starting, and changes nothing") {
  // run_starting came first: the observer saw a run start that never finished, the pipeline's
  // refusal reaching the caller after it.
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseClock::make<Ctx>(rt, one_task("Copy", "memcpy"));
  pipe->fill_pipeline(std::vector<int>{0, 1, 2});
  REQUIRE(pipe->progress());
  Counting late;
  CHECK_THROWS_AS(swp::attach_run_observer(late, *pipe), swp::PipelineStateError);
  CHECK(late.runs == 0);
  CHECK(rt.stream("memcpy").observer() == nullptr);
  CHECK(rt.stream("default").observer() == nullptr);
  pipe->drain();
  CHECK(late.started == 0);
  // Between runs it attaches.
  swp::attach_run_observer(late, *pipe);
  CHECK(late.runs == 1);
  swp::detach_run_observer(late, *pipe);
  CHECK(late.finished_runs == 1);
}

TEST_CASE("an observer whose run_starting throws is not attached") {
  struct Refusing final : swp::RunObserver {
    std::atomic<int> started{0};
    void run_starting(swp::Runtime&, const swp::PlanGraph&) override {
      throw std::runtime_error("no room for a trace");
    }
    void run_finished() noexcept override {}
    void task_released(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
    void task_started(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {
      ++started;
    }
    void task_finished(swp::TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override {}
    void device_work(const swp::Stream&, const swp::DeviceWork&) noexcept override {}
  };
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseClock::make<Ctx>(rt, one_task("Copy", "memcpy"));
  Counting before;
  pipe->set_observer(&before);  // what the pipeline reported to before
  Refusing refusing;
  CHECK_THROWS_WITH_AS(swp::attach_run_observer(refusing, *pipe), "no room for a trace",
                       std::runtime_error);
  CHECK(rt.stream("memcpy").observer() == nullptr);
  pipe->run(std::vector<int>{0, 1});
  CHECK(refusing.started == 0);
  CHECK(before.started == 2);
}

}  // namespace test_run_observer
