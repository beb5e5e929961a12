#include "swp/engine/run_stats.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "swp/engine/data_flow_pipeline.hpp"

namespace test_run_stats {  // each test file's names apart (unity builds)

namespace {
using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;
}  // namespace

TEST_CASE("us_per_iter is the elapsed time per iteration, 0 for no iteration") {
  CHECK(swp::RunStats{}.us_per_iter() == 0.0);
  CHECK(swp::RunStats{.iterations = 4, .elapsed = 2ms}.us_per_iter() == doctest::Approx(500.0));
  CHECK(swp::RunStats{.iterations = 0, .elapsed = 2ms}.us_per_iter() == 0.0);
}

TEST_CASE("run and run_serial report their iterations and the runtime's elapsed time") {
  // On sim the elapsed time is exact: 100 us of device work per iteration, one stream.
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("Work", [](Ctx&, swp::TaskScope& task) { task.device_work(100us); }, {.stage = 0});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  const swp::RunStats serial = pipe.run_serial(std::vector<int>(5, 0));
  CHECK(serial.iterations == 5);
  CHECK(serial.elapsed == 500us);
  CHECK(serial.us_per_iter() == doctest::Approx(100.0));
  const swp::RunStats piped = pipe.run(std::vector<int>(3, 0));
  CHECK(piped.iterations == 3);
  CHECK(piped.elapsed == 300us);
}

}  // namespace test_run_stats
