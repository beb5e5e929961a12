#include "swp/presets/preset.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swp/presets/preset_registry.hpp"

namespace test_preset {  // each test file's names apart (unity builds)

namespace presets = swp::presets;

TEST_SUITE_BEGIN("presets");

TEST_CASE("Preset::plan is the last phase's plan; on a temporary it is a value that outlives it") {
  auto preset = presets::make_preset("semi_sync", {.start_batch = 3});
  REQUIRE(preset.phases.size() == 2);
  CHECK(&preset.plan() == &preset.phases.back().plan);
  CHECK(preset.phase("sync") == &preset.phases.front());
  CHECK(preset.phase("nope") == nullptr);

  std::vector<std::string> names;
  for (const auto& t : presets::make_preset("base").plan().tasks) names.push_back(t.task.name);
  CHECK(names == std::vector<std::string>{"H2D", "ZeroGrad", "WaitBatch", "Forward", "Backward",
                                          "OptimizerStep"});
}

}  // namespace test_preset
