// The between-runs setters (set_timeouts, set_observer, enable_nvtx) are refused while a run
// drives the pipeline or has iterations in flight, naming the setter and the call.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/text.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_between_runs {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;
using swp::TaskIndex;

}  // namespace

TEST_CASE_TEMPLATE("the between-runs setters are refused while a run drives the pipeline", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // set_timeouts, set_observer and enable_nvtx took effect under a running run: the timer
  // thread of next()'s waits and the lanes read what they write (a data race).
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("Work", [](Ctx&) {});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  struct Quiet final : swp::TaskObserver {
    void task_released(TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
    void task_started(TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
    void task_finished(TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override {}
  } observer;
  const auto try_setters = [&] {
    std::vector<std::string> refused;
    const auto attempt = [&](const auto& call) {
      try {
        call();
      } catch (const swp::PipelineStateError& e) {
        refused.emplace_back(e.what());
      }
    };
    attempt([&] { pipe->set_timeouts({.retire = 5s}); });
    attempt([&] { pipe->set_observer(&observer); });
    attempt([&] { (void)pipe->enable_nvtx(true); });
    return refused;
  };
  const auto check_named = [](const std::vector<std::string>& refused, const char* driving) {
    REQUIRE(refused.size() == 3);
    CHECK(refused[0].starts_with("set_timeouts called while"));
    CHECK(refused[1].starts_with("set_observer called while"));
    CHECK(refused[2].starts_with("enable_nvtx called while"));
    for (const std::string& what : refused) CHECK(swp::test::contains(what, driving));
  };
  SUBCASE("from on_retire, while run() drives it") {
    std::vector<std::string> refused;
    pipe->on_retire([&](const Ctx& ctx) {
      if (ctx.iter_idx == 1) refused = try_setters();
    });
    pipe->run(std::vector<std::uint64_t>{1, 2, 3});
    check_named(refused, "run()");
  }
  SUBCASE("from on_retire, while a serial iteration runs") {
    std::vector<std::string> refused;
    pipe->on_retire([&](const Ctx&) { refused = try_setters(); });
    pipe->run_one_serial_iter(1, 0);
    check_named(refused, "run_one_serial_iter");
  }
  SUBCASE("between two progress() calls, iterations in flight") {
    pipe->fill_pipeline(std::vector<std::uint64_t>{1, 2, 3});
    REQUIRE(pipe->progress());
    const std::vector<std::string> refused = try_setters();
    REQUIRE(refused.size() == 3);
    CHECK(refused[0].starts_with("set_timeouts while a run is in progress"));
    CHECK(refused[1].starts_with("set_observer while a run is in progress"));
    CHECK(refused[2].starts_with("enable_nvtx while a run is in progress"));
    while (pipe->progress()) {
    }
  }
  // Between runs, each is accepted.
  CHECK(try_setters().empty());
  pipe->set_observer(nullptr);
}

}  // namespace test_pipeline_between_runs
