#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "swp/sim/search_space.hpp"

namespace test_search_space {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

TEST_CASE("search sizes: absent is the default, empty is powers of two, given is checked") {
  CHECK(swp::resolve_search_sizes(std::nullopt, 8, 1, "--pp-sizes") == std::vector<int>{1});
  CHECK(swp::resolve_search_sizes(std::vector<int>{}, 8, 1, "--pp-sizes") ==
        std::vector<int>{1, 2, 4, 8});
  CHECK(swp::resolve_search_sizes(std::vector<int>{}, 12, 1, "--pp-sizes") ==
        std::vector<int>{1, 2, 4, 8});
  CHECK(swp::resolve_search_sizes(std::vector<int>{4, 2, 4}, 8, 1, "--pp-sizes") ==
        std::vector<int>{4, 2});
  CHECK_THROWS_WITH_AS(swp::resolve_search_sizes(std::vector<int>{16}, 8, 1, "--pp-sizes"),
                       "--pp-sizes 16 must be in 1..8 (the device count)", std::invalid_argument);
  CHECK_THROWS_AS(swp::resolve_search_sizes(std::vector<int>{0}, 8, 1, "--tp-sizes"),
                  std::invalid_argument);
}

TEST_CASE("candidates keep tp x pp dividing the devices, dp the rest") {
  const auto c = swp::search_candidates(8, {1, 2}, {1, 2, 4});
  const std::vector<swp::Candidate> want{{1, 1, 8}, {1, 2, 4}, {1, 4, 2},
                                         {2, 1, 4}, {2, 2, 2}, {2, 4, 1}};
  CHECK(c == want);
  SUBCASE("non-dividing combinations are skipped") {
    CHECK(swp::search_candidates(12, {1, 8}, {1, 3}) ==
          std::vector<swp::Candidate>{{1, 1, 12}, {1, 3, 4}});
  }
}

TEST_CASE("no valid combination: the error lists why each failed") {
  try {
    (void)swp::search_candidates(8, {3}, {1, 5});
    FAIL("expected SearchSpaceError");
  } catch (const swp::SearchSpaceError& e) {
    CHECK(std::string(e.what()) ==
          "no tp x pp x dp = 8 combination: tp=3 pp=1: 8 devices are not divisible by tp x pp "
          "= 3; tp=3 pp=5: 8 devices are not divisible by tp x pp = 15");
  }
}

}  // namespace test_search_space
