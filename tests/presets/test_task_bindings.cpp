#include "swp/presets/task_bindings.hpp"

#include <doctest/doctest.h>

#include "swp/engine/iter_context.hpp"
#include "swp/engine/task_body.hpp"
#include "swp/presets/preset_registry.hpp"

namespace presets = swp::presets;

TEST_SUITE_BEGIN("presets");

namespace {

using Ctx = swp::IterContext<int>;

presets::TaskBindings bind_all(const std::vector<std::string>& names) {
  presets::TaskBindings tasks;
  for (const auto& n : names) tasks.bind(swp::task<Ctx>(n, [](Ctx&) {}));
  return tasks;
}

const std::vector<std::string> base_tasks{"H2D",     "ZeroGrad", "WaitBatch",
                                          "Forward", "Backward", "OptimizerStep"};

}  // namespace

TEST_CASE("bindings give every task its body and keep the preset's schedule") {
  const auto preset = presets::make_preset("base", bind_all(base_tasks));
  const auto unbound = presets::make_preset("base");
  REQUIRE(preset.plan().tasks.size() == unbound.plan().tasks.size());
  for (std::size_t i = 0; i < preset.plan().tasks.size(); ++i) {
    const auto& t = preset.plan().tasks[i];
    CAPTURE(t.task.name);
    CHECK(t.task.fn.has_value());
    CHECK(std::any_cast<swp::TaskBody<Ctx>>(&t.task.fn) != nullptr);
    CHECK(t.schedule == unbound.plan().tasks[i].schedule);
  }
}

TEST_CASE("a missing binding is an error naming the preset and the task") {
  auto names = base_tasks;
  names.erase(names.begin() + 3);  // Forward
  CHECK_THROWS_WITH_AS(presets::make_preset("base", bind_all(names)),
                       doctest::Contains("preset 'base': no binding for task 'Forward';"),
                       presets::BindingError);
}

TEST_CASE("a binding for a task the preset does not have is an error naming it") {
  auto names = base_tasks;
  names.push_back("EmbLookup");
  CHECK_THROWS_WITH_AS(presets::make_preset("base", bind_all(names)),
                       doctest::Contains("binding 'EmbLookup' names no task of it"),
                       presets::BindingError);
}

TEST_CASE("a name cannot be bound twice or be empty") {
  presets::TaskBindings tasks;
  tasks.bind(swp::task<Ctx>("H2D", [](Ctx&) {}));
  CHECK(tasks.contains("H2D"));
  CHECK(tasks.names() == std::vector<std::string>{"H2D"});
  CHECK_THROWS_WITH_AS(tasks.bind(swp::task<Ctx>("H2D", [](Ctx&) {})),
                       doctest::Contains("'H2D' is bound twice"), presets::BindingError);
  CHECK_THROWS_AS(tasks.bind(swp::PipelineTask{}), presets::BindingError);
  CHECK(tasks.size() == 1);
}

TEST_SUITE_END();
