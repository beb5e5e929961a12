#include "swp/presets/preset_runner.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/engines.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/task_body.hpp"
#include "swp/presets/preset_registry.hpp"

namespace test_preset_runner {  // each test file's names apart (unity builds)

namespace presets = swp::presets;
using namespace std::chrono_literals;

TEST_SUITE_BEGIN("presets");

namespace {

// The batch is the run-wide batch number, so bodies can tell batches apart across phases.
using Ctx = swp::IterContext<int>;

// Records every (task, batch) a body ran, in start order.
struct Journal {
  std::mutex mutex;
  std::vector<std::pair<std::string, int>> starts;

  void add(const std::string& task, int batch) {
    std::lock_guard lock(mutex);
    starts.emplace_back(task, batch);
  }
  std::size_t position(const std::string& task, int batch) {
    std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < starts.size(); ++i)
      if (starts[i] == std::pair{task, batch}) return i;
    FAIL("no start of ", task, " for batch ", batch);
    return 0;
  }
  int count(const std::string& task) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (const auto& s : starts) n += s.first == task;
    return n;
  }
};

// Binds every task of `name` (options applied) to a body that journals its start and queues a
// little device work on its stream.
presets::BasicPreset<swp::Plan<Ctx>> bound_preset(const std::string& name, Journal& journal,
                                                  presets::PresetOptions options = {}) {
  presets::TaskBindings<swp::Plan<Ctx>> tasks;
  const auto unbound = presets::make_preset(name, options);
  for (const auto& t : unbound.plan().tasks) {
    const std::string task_name = t.task.name;
    tasks.bind(task_name, [&journal, task_name](Ctx& ctx, swp::TaskScope& scope) {
      journal.add(task_name, ctx.batch);
      scope.device_work(10us);
    });
  }
  return presets::make_preset(name, tasks, options);
}

const swp::PipelinePlan& untyped(const swp::PipelinePlan& plan) { return plan; }
const swp::PipelinePlan& untyped(const swp::Plan<Ctx>& plan) { return plan.untyped(); }

// A phase's plan: a swp::Plan<Ctx> of a bound preset, or a PipelinePlan of an unbound one.
template <class Engine>
auto maker(swp::Runtime& runtime) {
  return [&runtime](const auto& plan) {
    return Engine::template make<Ctx>(runtime, plan, swp::validate(untyped(plan)).depth());
  };
}

// A source of batches 0..n-1.
auto counting(int n) {
  return [n, next = 0]() mutable -> std::optional<int> {
    if (next == n) return std::nullopt;
    return next++;
  };
}

}  // namespace

TEST_CASE_TEMPLATE("every preset runs to completion with bound tasks", Engine, swp::test::UseClock,
                   swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::sim, swp::Backend::host}) {
    for (const auto& info : presets::preset_catalogue()) {
      const std::string name(info.name);
      CAPTURE(name);
      CAPTURE(swp::backend_name(backend));
      Journal journal;
      int compiled = 0;
      const auto preset = bound_preset(name, journal, {.start_batch = 4, .compile = [&] { ++compiled; }});
      swp::Runtime runtime({.backend = backend, .dedicated_lanes = preset.dedicated_lanes});
      presets::PresetRunner runner(preset, maker<Engine>(runtime));
      constexpr int n = 12;
      runner.fill_pipeline(counting(n));
      std::vector<std::int64_t> retired;
      while (auto iter = runner.progress()) retired.push_back(*iter);
      std::vector<std::int64_t> expected(n);
      for (int i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
      CHECK(retired == expected);
      for (const auto& t : preset.plan().tasks) CHECK(journal.count(t.task.name) == n);
      CHECK(compiled == (name == "pt2" ? 1 : 0));
    }
  }
}

TEST_CASE_TEMPLATE("pt2's compile step runs once, before iteration compile_on_iter", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Journal journal;
  int forwards_before_compile = -1;
  const auto preset = bound_preset("pt2", journal, {.compile_on_iter = 4, .compile = [&] {
    forwards_before_compile = journal.count("Forward");
  }});
  swp::Runtime runtime({.backend = swp::Backend::sim});
  presets::PresetRunner runner(preset, maker<Engine>(runtime));
  CHECK(runner.run(counting(10)) == 10);
  CHECK(forwards_before_compile == 3);
}

TEST_CASE_TEMPLATE("semi_sync batches of the warm-up see the previous optimizer step", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Journal journal;
  const auto preset = bound_preset("semi_sync", journal, {.start_batch = 6});
  swp::Runtime runtime({.backend = swp::Backend::sim});
  presets::PresetRunner runner(preset, maker<Engine>(runtime));
  CHECK(runner.run(counting(16)) == 16);
  REQUIRE(runner.pipeline(0) != nullptr);
  REQUIRE(runner.pipeline(1) != nullptr);
  CHECK(runner.phase().label == "semi_sync");
  for (int i = 1; i < 6; ++i) {
    CAPTURE(i);
    CHECK(journal.position("OptimizerStep", i - 1) < journal.position("EmbLookup", i));
  }
}

TEST_CASE_TEMPLATE("training presets zero gradients only after the previous optimizer step", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Gradients of batch i-1 must be consumed by OptimizerStep(i-1) before ZeroGrad(i) clears
  // them. The clock engine gets this from its period order; the data-flow engine would fire
  // ZeroGrad(i) as soon as batch i is admitted without the dependency swp adds.
  for (const auto& info : presets::preset_catalogue()) {
    const std::string name(info.name);
    Journal journal;
    const auto preset = bound_preset(name, journal, {.start_batch = 2});
    bool trains = false;
    for (const auto& t : preset.plan().tasks) trains = trains || t.task.name == "ZeroGrad";
    if (!trains) continue;
    CAPTURE(name);
    swp::Runtime runtime({.backend = swp::Backend::sim});
    presets::PresetRunner runner(preset, maker<Engine>(runtime));
    CHECK(runner.run(counting(10)) == 10);
    for (int i = 1; i < 10; ++i) {
      CAPTURE(i);
      CHECK(journal.position("OptimizerStep", i - 1) < journal.position("ZeroGrad", i));
    }
  }
}

TEST_CASE("staged callbacks: filled once per fill, data exhausted once, flush drains and resumes") {
  Journal journal;
  int filled = 0, exhausted = 0, flushed = 0;
  presets::PresetOptions options{
      .stages = {{"data_copy", "", [&] { ++filled; }, [&] { ++exhausted; }}, {"gpu_postproc", ""}}};
  const auto preset = bound_preset("staged", journal, options);
  swp::Runtime runtime({.backend = swp::Backend::sim});
  presets::PresetRunner runner(preset, maker<swp::test::UseClock>(runtime));
  runner.fill_pipeline(counting(10));
  std::vector<std::int64_t> retired;
  for (int i = 0; i < 3; ++i) retired.push_back(runner.progress().value());
  CHECK(filled == 1);

  runner.set_flush(true, [&] { ++flushed; });
  while (auto iter = runner.progress()) retired.push_back(*iter);
  CHECK(flushed == 1);
  CHECK(retired.size() < 10);
  CHECK_FALSE(runner.progress().has_value());  // stays flushed while the flag is set
  CHECK(flushed == 1);

  runner.set_flush(false);
  while (auto iter = runner.progress()) retired.push_back(*iter);
  CHECK(filled == 2);  // the refill is a fill too
  CHECK(exhausted == 1);
  CHECK(flushed == 1);
  std::vector<std::int64_t> expected(10);
  for (int i = 0; i < 10; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(retired == expected);
  CHECK(journal.count("gpu_postproc") == 10);
}

TEST_CASE(
    "a runner owns its preset: a temporary does not dangle, and later changes to the caller's "
    "preset do not reach it") {
  static_assert(!std::is_copy_constructible_v<presets::PresetRunner<
                    decltype(maker<swp::test::UseClock>(std::declval<swp::Runtime&>()))>>);
  Journal journal;
  swp::Runtime runtime({.backend = swp::Backend::sim});
  SUBCASE("a temporary preset") {
    int entered = 0;
    presets::PresetRunner runner(
        bound_preset("pt2", journal, {.compile_on_iter = 3, .compile = [&] { ++entered; }}),
        maker<swp::test::UseClock>(runtime));
    CHECK(runner.run(counting(8)) == 8);
    CHECK(entered == 1);
    CHECK(journal.count("Forward") == 8);
  }
  SUBCASE("a named preset, reassigned after the runner was made") {
    int filled = 0, filled_later = 0;
    auto preset = bound_preset("semi_sync", journal, {.start_batch = 3});
    preset.on_filled = [&] { ++filled; };
    presets::PresetRunner runner(preset, maker<swp::test::UseClock>(runtime));
    // With a reference the runner would now run "base", with one phase and the new callback.
    preset = bound_preset("base", journal);
    preset.on_filled = [&] { ++filled_later; };
    CHECK(runner.run(counting(8)) == 8);
    REQUIRE(runner.pipeline(1) != nullptr);
    CHECK(runner.phase().label == "semi_sync");
    CHECK(filled == 2);  // once per phase's fill
    CHECK(filled_later == 0);
  }
}

TEST_CASE("progress before fill_pipeline is an error") {
  const auto preset = presets::make_preset("base");
  swp::Runtime runtime({.backend = swp::Backend::sim});
  presets::PresetRunner runner(preset, maker<swp::test::UseClock>(runtime));
  CHECK_THROWS_AS(runner.progress(), std::logic_error);
}

TEST_SUITE_END();

}  // namespace test_preset_runner
