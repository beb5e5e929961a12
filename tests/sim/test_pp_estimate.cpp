#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "swp/sim/pp_estimate.hpp"

namespace test_pp_estimate {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

TEST_CASE("latency is the sum of stage times plus (m - 1) times the slowest") {
  const auto e = swp::estimate_pipeline({10, 20, 15}, {1, 2, 1}, 4);
  CHECK(e.stage_us == std::vector<double>{11, 22, 16});
  CHECK(e.latency_us == doctest::Approx(49 + 3 * 22));
  CHECK(e.compute_us() == 45);
  CHECK(e.comm_us() == 4);
  CHECK(e.bubble_us() == doctest::Approx(66));
}

TEST_CASE("one microbatch has no bubble") {
  const auto e = swp::estimate_pipeline({10, 20, 15}, {1, 2, 1}, 1);
  CHECK(e.latency_us == 49);
  CHECK(e.bubble_us() == 0);
  CHECK(swp::format_pp_breakdown(e) == "PP Compute 91.84 | PP Comm 8.16 | PP Bubble 0.00");
}

TEST_CASE("one stage is no pipeline: no bubble, however many microbatches") {
  const auto e = swp::estimate_pipeline({30}, {0}, 3);
  CHECK(e.latency_us == 90);  // the microbatches one after another
  CHECK(e.bubble_us() == 0);
  CHECK(swp::format_pp_breakdown(e) == "PP Compute 100.00 | PP Comm 0.00 | PP Bubble 0.00");
}

TEST_CASE("the breakdown line is the seed's: compute 50, comm 16.67, bubble 33.33") {
  // Stage times 2 + 2, one more microbatch at the slowest stage's pace: latency 6, bubble 2.
  const auto e = swp::estimate_pipeline({1.5, 1.5}, {0.5, 0.5}, 2);
  CHECK(e.latency_us == 6);
  CHECK(swp::format_pp_breakdown(e) == "PP Compute 50.00 | PP Comm 16.67 | PP Bubble 33.33");
  CHECK(swp::format_pp_breakdown(swp::estimate_pipeline({0}, {0}, 3)) ==
        "PP Compute 0.00 | PP Comm 0.00 | PP Bubble 0.00");
}

TEST_CASE("bad estimate inputs are named") {
  CHECK_THROWS_WITH_AS(swp::estimate_pipeline({1, 2}, {0, 0}, 0),
                       "microbatch count 0 must be at least 1", std::invalid_argument);
  CHECK_THROWS_AS(swp::estimate_pipeline({1, 2}, {0}, 1), std::invalid_argument);
  CHECK_THROWS_AS(swp::estimate_pipeline({}, {}, 1), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::estimate_pipeline({1, -2}, {0, 0}, 1),
                       "compute time of stage 1 (-2 us) must be finite and >= 0",
                       std::invalid_argument);
}

TEST_CASE("numbers in estimate errors are compact: -1e300 is not 301 digits") {
  CHECK_THROWS_WITH_AS(swp::estimate_pipeline({1, -1e300}, {0, 0}, 1),
                       "compute time of stage 1 (-1e+300 us) must be finite and >= 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::estimate_pipeline({1, 1}, {0, 1e300 * 1e300}, 1),
                       "comm time of stage 1 (inf us) must be finite and >= 0",
                       std::invalid_argument);
}

}  // namespace test_pp_estimate
