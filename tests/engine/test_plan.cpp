#include "swp/engine/plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_plan {  // each test file's names apart (unity builds)

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

namespace {

template <class... Producers>
concept CanRead = requires(Producers... producers) { swp::reads(producers...); };

}  // namespace

TEST_CASE("swp::reads names at least one producer: handles or names") {
  static_assert(CanRead<swp::Output<int>>);
  static_assert(CanRead<swp::Output<int>, swp::TaskHandle, const char*>);
  static_assert(!CanRead<>);
  static_assert(!CanRead<int>);
  const swp::Reads reads = swp::reads(swp::Output<int>{{3, "A"}}, "B");
  REQUIRE(reads.producers().size() == 2);
  CHECK(reads.producers()[0].name() == "A");
  CHECK(reads.producers()[0].handle() != nullptr);
  CHECK(reads.producers()[1].name() == "B");
}

TEST_CASE("a declared read is the intra-iteration dependency, listed once") {
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  auto b = plan.add("B", [](Ctx& ctx) { return ctx.batch + 1; }, {.stage = 0});
  SUBCASE("declared only as a read") {}
  SUBCASE("also listed by hand before") { plan.intra_iter_deps = {{"C", "A"}}; }
  auto c = plan.add("C", [a, b](Ctx& ctx) -> swp::Co<void> {
    ctx.sum = co_await ctx.get(a) + co_await ctx.get(b);
  }, {.stage = 1}, swp::reads(a, b), {.cpu_us = 1});
  // The cost still goes to the task; a `{}` cost is not taken for reads.
  plan.add("D", [](Ctx&) {}, {.stage = 1}, {});
  CHECK(plan.tasks[2].cost.cpu_us == 1);
  CHECK(plan.reads() == std::vector<swp::Dependency>{{c, a}, {c, b}});
  REQUIRE(plan.intra_iter_deps.size() == 2);
  CHECK(plan.intra_iter_deps[0].task.name() == "C");
  CHECK(plan.intra_iter_deps[0].depends_on.name() == "A");
  CHECK(plan.intra_iter_deps[1].depends_on.name() == "B");

  // Validation, the orders and the schedule table see it (they all work on the graph).
  const auto graph = swp::validate(plan.untyped());
  CHECK(std::vector<swp::TaskIndex>(graph.intra_deps(c.index).begin(),
                                    graph.intra_deps(c.index).end()) ==
        std::vector<swp::TaskIndex>{a.index, b.index});

  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  std::vector<int> sums;
  pipe.on_retire([&](const Ctx& ctx) { sums.push_back(ctx.sum); });
  CHECK(pipe.run(std::vector<int>{1, 10}).iterations == 2);
  CHECK(sums == std::vector<int>{3, 21});
}

TEST_CASE("a read that breaks a rule is reported by validation, naming both tasks") {
  swp::Plan<Ctx> plan;
  auto late = plan.add("Late", [](Ctx&) { return 1; }, {.stage = 1});
  plan.add("Early", [late](Ctx& ctx) -> swp::Co<void> { ctx.sum = co_await ctx.get(late); },
           {.stage = 0}, swp::reads(late));
  swp::Runtime rt({.backend = swp::Backend::sim});
  CHECK_THROWS_WITH_AS(swp::ClockPipeline<Ctx>(rt, plan),
                       doctest::Contains("corollary 1: 'Early' (stage 0) depends within the "
                                         "iteration on 'Late' (stage 1)"),
                       swp::PlanError);
}

TEST_CASE("a pipeline refuses a plan whose declared reads were dropped from intra_iter_deps") {
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx&) { return 1; });
  auto b = plan.add("B", [a](Ctx& ctx) -> swp::Co<void> { ctx.sum = co_await ctx.get(a); },
                    {}, swp::reads(a));
  plan.intra_iter_deps = {};  // assigned after B was added: the read is gone
  (void)b;
  swp::Runtime rt({.backend = swp::Backend::sim});
  CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(rt, plan, 1),
                       doctest::Contains("task 'B' declares that it reads 'A' (swp::reads), but "
                                         "intra_iter_deps no longer lists {\"B\", \"A\"}"),
                       std::invalid_argument);
}

TEST_CASE("a pipeline accepts a plan whose declared reads were reordered in intra_iter_deps") {
  // The reads are still listed, out of the order they were declared in: the pipeline's quick
  // in-order pass does not find them, and the exact check behind it does.
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx& ctx) { return ctx.batch; });
  auto b = plan.add("B", [a](Ctx& ctx) -> swp::Co<int> { co_return co_await ctx.get(a) + 1; },
                    {}, swp::reads(a));
  plan.add("C", [b](Ctx& ctx) -> swp::Co<void> { ctx.sum += co_await ctx.get(b); }, {},
           swp::reads(b));
  std::reverse(plan.intra_iter_deps.begin(), plan.intra_iter_deps.end());
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  std::vector<int> sums;
  pipe.on_retire([&](const Ctx& ctx) { sums.push_back(ctx.sum); });
  CHECK(pipe.run(std::vector<int>{1, 10, 100}).iterations == 3);
  CHECK(sums == std::vector<int>{2, 11, 101});
}

TEST_CASE("reads stay listed once however intra_iter_deps changed between adds") {
  // The plan indexes intra_iter_deps as it grows (linear construction); what a user does to
  // the list directly must not make it skip a read nor list one twice.
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx& ctx) { return ctx.batch; });
  auto b = plan.add("B", [](Ctx& ctx) { return ctx.batch; });
  plan.add("C", [](Ctx&) {}, {}, swp::reads(a));  // indexes {C, A}
  SUBCASE("appended by hand, then declared") {
    plan.intra_iter_deps.push_back({"D", "B"});
    plan.add("D", [](Ctx&) {}, {}, swp::reads(b));
    CHECK(plan.intra_iter_deps.size() == 2);
  }
  SUBCASE("the list cleared and refilled by hand, then declared") {
    plan.intra_iter_deps.clear();
    plan.intra_iter_deps.push_back({"C", "A"});
    plan.add("D", [](Ctx&) {}, {}, swp::reads(a, b));
    plan.add("E", [](Ctx&) {}, {}, swp::reads(a));
    REQUIRE(plan.intra_iter_deps.size() == 4);
    CHECK(plan.intra_iter_deps[1].task.name() == "D");
    CHECK(plan.intra_iter_deps[3].task.name() == "E");
  }
  SUBCASE("an entry replaced in place is caught when the pipeline is made") {
    plan.intra_iter_deps[0] = {"B", "A"};  // {C, A} gone, though the index saw it
    plan.add("D", [](Ctx&) {}, {}, swp::reads(a));
    swp::Runtime rt({.backend = swp::Backend::sim});
    CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(rt, plan, 1),
                         doctest::Contains("intra_iter_deps no longer lists {\"C\", \"A\"}"),
                         std::invalid_argument);
    return;
  }
  SUBCASE("a copy indexes its own list") {
    swp::Plan<Ctx> copy = plan;
    copy.intra_iter_deps.push_back({"D", "A"});
    copy.add("D", [](Ctx&) {}, {}, swp::reads(a));
    CHECK(copy.intra_iter_deps.size() == 2);
    plan = copy;
    plan.add("E", [](Ctx&) {}, {}, swp::reads(a));
    CHECK(plan.intra_iter_deps.size() == 3);
  }
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  CHECK(pipe.run(std::vector<int>{1}).iterations == 1);
}

TEST_CASE("bind by name finds the task a scan would, after tasks changed in place") {
  swp::PipelinePlan plain;
  plain.add({"A"});
  plain.add({"B"});
  swp::Plan<Ctx> plan(plain);
  plan.bind("B", [](Ctx&) {});  // indexes A and B
  plan.tasks[0].task.name = "Z";
  plan.tasks.push_back({{"A"}, {}, {}});
  CHECK(plan.bind("A", [](Ctx&) {}).index == 2);
  CHECK(plan.bind("Z", [](Ctx&) {}).index == 0);
  CHECK_THROWS_WITH_AS(plan.bind("Q", [](Ctx&) {}), doctest::Contains("'Q' is not a task"),
                       std::invalid_argument);
}

TEST_CASE("reading a producer neither read-declared nor a dependency names both tasks") {
  swp::Plan<Ctx> plan;
  auto a = plan.add("A", [](Ctx&) { return 1; });
  plan.add("B", [a](Ctx& ctx) -> swp::Co<void> { ctx.sum = co_await ctx.get(a); });
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  try {
    pipe.run_serial(std::vector<int>{1});
    FAIL("no error");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "B");
    CHECK_THROWS_WITH_AS(std::rethrow_exception(e.nested()),
                         doctest::Contains("task 'B' reads the output of 'A' without declaring "
                                           "it: add the task with swp::reads(...) naming 'A'"),
                         swp::UndeclaredDependency);
  }
}

}  // namespace test_plan
