#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "swp/sim/stage_memory.hpp"

namespace test_stage_memory {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

TEST_CASE("a stage holds its active layers plus the edge modules it owns") {
  // 10 layers of 100 B weights and 4 B of KV per token; embedding 1000, norm 10, lm_head 900.
  const auto model = swp::ModelMemory::uniform(10, 100, 4, 1000, 10, 900);
  const auto plan = swp::StagePlan::uniform(10, 4);  // 3, 3, 3, 1 layers
  const auto mem = swp::stage_memory(plan, model);
  REQUIRE(mem.size() == 4);
  CHECK(mem[0] == swp::StageMemory{0, 300 + 1000, 12});
  CHECK(mem[1] == swp::StageMemory{1, 300, 12});
  CHECK(mem[2] == swp::StageMemory{2, 300, 12});
  CHECK(mem[3] == swp::StageMemory{3, 100 + 10 + 900, 4});
  const auto peak = swp::stage_memory_peak(plan, model, 2048);
  CHECK(peak.max_stage_weight_bytes == 1300);
  CHECK(peak.max_stage_kv_cache_bytes == 12 * 2048);
}

TEST_CASE("one stage holds the whole model") {
  const auto model = swp::ModelMemory::uniform(6, 100, 4, 1000, 10, 900);
  const auto mem = swp::stage_memory(swp::StagePlan::uniform(6, 1), model);
  REQUIRE(mem.size() == 1);
  CHECK(mem[0] == swp::StageMemory{0, 600 + 1000 + 10 + 900, 24});
}

TEST_CASE("unlike layers and an explicit partition") {
  swp::ModelMemory model{{10, 10, 50, 50}, {1, 1, 3, 3}, 0, 0, 0};
  const auto mem = swp::stage_memory(swp::StagePlan::from_layer_counts({3, 1}), model);
  CHECK(mem[0].weight_bytes == 70);
  CHECK(mem[0].kv_bytes_per_token == 5);
  CHECK(mem[1].weight_bytes == 50);
  CHECK(mem[1].kv_bytes_per_token == 3);
}

TEST_CASE("memory inputs that do not fit the plan are named") {
  const auto model = swp::ModelMemory::uniform(6, 100, 4, 0, 0, 0);
  CHECK_THROWS_AS(swp::stage_memory(swp::StagePlan::uniform(5, 2), model), std::invalid_argument);
  swp::ModelMemory bad{{10, -1}, {1, 1}, 0, 0, 0};
  CHECK_THROWS_WITH_AS(swp::stage_memory(swp::StagePlan::uniform(2, 2), bad),
                       "layer 1 weight size -1 is negative", std::invalid_argument);
  CHECK_THROWS_AS(swp::stage_memory_peak(swp::StagePlan::uniform(6, 2), model, -5),
                  std::invalid_argument);
}

TEST_CASE("sizes whose sum or product does not fit 64 bits are refused, naming the stage") {
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  SUBCASE("a stage's weights") {
    const auto model = swp::ModelMemory::uniform(4, huge, 1, 0, 0, 0);
    CHECK_THROWS_WITH_AS(swp::stage_memory(swp::StagePlan::uniform(4, 2), model),
                         doctest::Contains("stage 0 weight bytes"), std::invalid_argument);
  }
  SUBCASE("a stage's edge module") {
    const auto model = swp::ModelMemory::uniform(2, huge, 1, huge, 0, 0);
    CHECK_THROWS_WITH_AS(swp::stage_memory(swp::StagePlan::uniform(2, 2), model),
                         doctest::Contains("stage 0 weight bytes"), std::invalid_argument);
  }
  SUBCASE("a stage's KV cache per token") {
    const auto model = swp::ModelMemory::uniform(2, 1, huge, 0, 0, 0);
    CHECK_THROWS_WITH_AS(swp::stage_memory(swp::StagePlan::uniform(2, 1), model),
                         doctest::Contains("stage 0 KV cache bytes per token"),
                         std::invalid_argument);
  }
  SUBCASE("a stage's KV cache for the tokens") {
    const auto model = swp::ModelMemory::uniform(2, 1, huge, 0, 0, 0);
    CHECK_THROWS_WITH_AS(swp::stage_memory_peak(swp::StagePlan::uniform(2, 2), model, 4),
                         doctest::Contains("stage 0 KV cache for 4 tokens"), std::invalid_argument);
  }
}

}  // namespace test_stage_memory
