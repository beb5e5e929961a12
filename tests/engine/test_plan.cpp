#include "swp/engine/plan.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace {

using namespace std::chrono_literals;
struct Fields {
  int sum = 0;
};
using Ctx = swp::IterContext<int, Fields>;
using Other = swp::IterContext<std::string>;

template <class P, class Fn>
concept CanAdd = requires(P& plan, Fn fn) { plan.add("X", fn); };
template <class P, class Fn>
concept CanBind = requires(P& plan, Fn fn) { plan.bind("X", fn); };

}  // namespace

TEST_CASE("a body for another context type does not compile") {
  auto right = [](Ctx&) {};
  auto right_with_scope = [](Ctx&, swp::TaskScope&) -> swp::Co<int> { co_return 1; };
  auto wrong = [](Other&) {};
  auto not_a_body = [](int, int) {};
  static_assert(CanAdd<swp::Plan<Ctx>, decltype(right)>);
  static_assert(CanAdd<swp::Plan<Ctx>, decltype(right_with_scope)>);
  static_assert(!CanAdd<swp::Plan<Ctx>, decltype(wrong)>);
  static_assert(!CanAdd<swp::Plan<Ctx>, decltype(not_a_body)>);
  static_assert(CanBind<swp::Plan<Ctx>, decltype(right)>);
  static_assert(!CanBind<swp::Plan<Ctx>, decltype(wrong)>);
  static_assert(CanAdd<swp::Plan<Other>, decltype(wrong)>);
  // Nor does a pipeline over another context type take the plan, and the plan never turns
  // into a plain PipelinePlan (dropping its bodies) by itself.
  static_assert(std::is_constructible_v<swp::ClockPipeline<Ctx>, swp::Runtime&, const swp::Plan<Ctx>&>);
  static_assert(!std::is_constructible_v<swp::ClockPipeline<Ctx>, swp::Runtime&, const swp::Plan<Other>&>);
  static_assert(!std::is_constructible_v<swp::DataFlowPipeline<Ctx>, swp::Runtime&,
                                         const swp::Plan<Other>&, int>);
  static_assert(!std::is_convertible_v<const swp::Plan<Ctx>&, const swp::PipelinePlan&>);
  static_assert(std::is_constructible_v<swp::ClockPipeline<Ctx>, swp::Runtime&, const swp::PipelinePlan&>);
}

TEST_CASE("add binds a typed body and returns the typed handle of its output") {
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx& ctx) { return ctx.batch * 2; }, {.stage = 0});
  auto b = plan.add("B", [a](Ctx& ctx) -> swp::Co<void> { ctx.sum = co_await ctx.get(a) + 1; },
                    {.stage = 1, .thread_group = "b"}, {.cpu_us = 3});
  static_assert(std::is_same_v<decltype(a), swp::Output<int>>);
  static_assert(std::is_same_v<decltype(b), swp::Output<void>>);
  CHECK(a.index == 0);
  CHECK(b.name == "B");
  REQUIRE(plan.tasks.size() == 2);
  CHECK(plan.tasks[1].schedule.thread_group == "b");
  CHECK(plan.tasks[1].cost.cpu_us == 3);
  CHECK(plan.body("A") != nullptr);
  CHECK(plan.body(b) != nullptr);
  CHECK(plan.body("C") == nullptr);
  CHECK(&plan.untyped().tasks == &plan.tasks);  // the plain part, not a copy
  plan.intra_iter_deps = {{b, a}};

  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  std::vector<int> sums;
  pipe.on_retire([&](const Ctx& ctx) { sums.push_back(ctx.sum); });
  CHECK(pipe.run(std::vector<int>{1, 2, 3}).iterations == 3);
  CHECK(sums == std::vector<int>{3, 5, 7});
}

TEST_CASE("bind gives the tasks of a plain plan their bodies by name or handle") {
  swp::PipelinePlan plain;
  auto a = plain.add({"A"}, {.stage = 0});
  plain.add({"B"}, {.stage = 0}, {.cpu_us = 100});
  plain.intra_iter_deps = {{"B", "A"}};
  swp::Plan<Ctx> plan(plain);
  CHECK(plan.body("A") == nullptr);
  auto out = plan.bind(a, [](Ctx& ctx) { ctx.sum = ctx.batch; });
  static_assert(std::is_same_v<decltype(out), swp::Output<void>>);
  CHECK(plan.body("A") != nullptr);
  CHECK_THROWS_WITH_AS(plan.bind("A", [](Ctx&) {}), doctest::Contains("'A' has a body already"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(plan.bind("Z", [](Ctx&) {}), doctest::Contains("'Z' is not a task"),
                       std::invalid_argument);

  // B has no body: it runs its synthetic cost (100 us of CPU, virtual time on sim).
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  int last = 0;
  pipe.on_retire([&](const Ctx& ctx) { last = ctx.sum; });
  const auto stats = pipe.run_serial(std::vector<int>{4, 5});
  CHECK(last == 5);
  CHECK(stats.elapsed == 200us);
}

TEST_CASE("a plain PipelinePlan runs on synthetic costs only") {
  swp::Plan<Ctx> plan;
  int runs = 0;
  plan.add("A", [&runs](Ctx&) { ++runs; }, {.stage = 0}, {.cpu_us = 50});
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> synthetic(rt, plan.untyped());
  CHECK(synthetic.run_serial(std::vector<int>{1, 2}).elapsed == 100us);
  CHECK(runs == 0);
  swp::ClockPipeline<Ctx> bodies(rt, plan);
  bodies.run_serial(std::vector<int>{1, 2});
  CHECK(runs == 2);
}

TEST_CASE("a pipeline refuses bodies whose tasks were removed or reordered after binding") {
  swp::Plan<Ctx> plan;
  plan.add("A", [](Ctx&) {});
  plan.add("B", [](Ctx&) {});
  std::swap(plan.tasks[0], plan.tasks[1]);
  swp::Runtime rt({.backend = swp::Backend::sim});
  CHECK_THROWS_WITH_AS(swp::ClockPipeline<Ctx>(rt, plan),
                       doctest::Contains("the body bound for task 'A' is at position 0, which now "
                                         "holds task 'B'"),
                       std::invalid_argument);
  swp::Plan<Ctx> shorter;
  shorter.add("A", [](Ctx&) {});
  shorter.add("B", [](Ctx&) {});
  shorter.tasks.pop_back();
  CHECK_THROWS_WITH_AS(swp::ClockPipeline<Ctx>(rt, shorter),
                       doctest::Contains("the body bound for task 'B' is at position 1, which the "
                                         "plan no longer has"),
                       std::invalid_argument);
}

TEST_CASE("a plan with bodies copies: the copies share each body's callable") {
  auto counter = std::make_shared<int>(0);
  swp::Plan<Ctx> plan;
  plan.add("A", [counter](Ctx&) { ++*counter; });
  const swp::Plan<Ctx> copy = plan;
  CHECK(counter.use_count() == 2);  // one callable, held by both plans' bodies
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx>(rt, copy).run_serial(std::vector<int>{1});
  swp::ClockPipeline<Ctx>(rt, plan).run_serial(std::vector<int>{1});
  CHECK(*counter == 2);
}
