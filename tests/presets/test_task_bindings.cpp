#include "swp/presets/task_bindings.hpp"

#include <doctest/doctest.h>

#include <any>
#include <string>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/presets/preset_registry.hpp"

namespace test_task_bindings {  // each test file's names apart (unity builds)

namespace presets = swp::presets;

TEST_SUITE_BEGIN("presets");

namespace {

using Ctx = swp::IterContext<int>;
using Other = swp::IterContext<std::string>;
using Bindings = presets::TaskBindings<swp::Plan<Ctx>>;

Bindings bind_all(const std::vector<std::string>& names) {
  Bindings tasks;
  for (const auto& n : names) tasks.bind(n, [](Ctx&) {});
  return tasks;
}

const std::vector<std::string> base_tasks{"H2D",     "ZeroGrad", "WaitBatch",
                                          "Forward", "Backward", "OptimizerStep"};

template <class B, class Fn>
concept CanBind = requires(B& tasks, Fn fn) { tasks.bind("H2D", fn); };

}  // namespace

TEST_CASE("a body for another context type does not bind") {
  auto right = [](Ctx&) {};
  auto right_with_scope = [](Ctx&, swp::TaskScope&) -> swp::Co<void> { co_return; };
  auto wrong = [](Other&) {};
  auto not_a_body = [](int) {};
  static_assert(CanBind<Bindings, decltype(right)>);
  static_assert(CanBind<Bindings, decltype(right_with_scope)>);
  static_assert(!CanBind<Bindings, decltype(wrong)>);
  static_assert(!CanBind<Bindings, decltype(not_a_body)>);
  static_assert(CanBind<presets::TaskBindings<swp::Plan<Other>>, decltype(wrong)>);
}

TEST_CASE("bindings give every task its body and keep the preset's schedule") {
  const auto preset = presets::make_preset("base", bind_all(base_tasks));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(preset.plan())>, swp::Plan<Ctx>>);
  const auto unbound = presets::make_preset("base");
  REQUIRE(preset.plan().tasks.size() == unbound.plan().tasks.size());
  for (std::size_t i = 0; i < preset.plan().tasks.size(); ++i) {
    const auto& t = preset.plan().tasks[i];
    CAPTURE(t.task.name);
    CHECK(preset.plan().body(t.task.name) != nullptr);
    CHECK(t.schedule == unbound.plan().tasks[i].schedule);
  }
  CHECK(preset.plan().intra_iter_deps == unbound.plan().intra_iter_deps);
}

TEST_CASE("every phase is bound, and the bodies and DeclaredIO run on an engine") {
  int runs = 0, captures = 0;
  presets::TaskBindings<swp::Plan<Ctx>> tasks;
  for (const auto& t : presets::make_preset("semi_sync").plan().tasks) {
    const std::string& n = t.task.name;
    if (n == "Forward") {
      tasks.bind(n, [&runs](Ctx&) { ++runs; },
                 {swp::DeclaredIO{[&captures] {
                                    ++captures;
                                    return std::any{};
                                  },
                                  [](const std::any&) {}}});
    } else {
      tasks.bind(n, [](Ctx&) {});
    }
  }
  const auto preset = presets::make_preset("semi_sync", tasks);
  REQUIRE(preset.phases.size() == 2);
  for (const auto& phase : preset.phases) {
    CAPTURE(phase.label);
    CHECK(phase.plan.body("Forward") != nullptr);
    const auto& forward = phase.plan.tasks[*swp::validate(phase.plan.untyped()).find("Forward")];
    CHECK(forward.task.io.size() == 1);
  }
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, preset.plan());
  pipe.enable_shortcut("Forward");
  CHECK(pipe.run_serial(std::vector<int>{1, 2, 3}).iterations == 3);
  CHECK(runs == 1);      // the shortcut cached it once, then replayed
  CHECK(captures == 1);  // its DeclaredIO was captured by the caching run
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
  Bindings tasks;
  tasks.bind("H2D", [](Ctx&) {});
  CHECK(tasks.contains("H2D"));
  CHECK(tasks.names() == std::vector<std::string>{"H2D"});
  CHECK_THROWS_WITH_AS(tasks.bind("H2D", [](Ctx&) {}), doctest::Contains("'H2D' is bound twice"),
                       presets::BindingError);
  CHECK_THROWS_AS(tasks.bind("", [](Ctx&) {}), presets::BindingError);
  CHECK(tasks.size() == 1);
}

TEST_SUITE_END();

}  // namespace test_task_bindings
