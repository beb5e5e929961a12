#include "swp/engine/task_body.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/async/detail/frame_allocator.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/plan.hpp"

namespace test_task_body {  // each test file's names apart (unity builds)

namespace {

struct Fields {
  std::string label;
  int value = 0;
};
using Ctx = swp::IterContext<int, Fields>;
using Other = swp::IterContext<std::string>;

// Counts live instances, to see how often a body's callable is copied.
struct Counted {
  static inline int alive = 0;
  Counted() { ++alive; }
  Counted(const Counted&) { ++alive; }
  Counted(Counted&&) noexcept { ++alive; }
  ~Counted() { --alive; }
};

// The fields of every retired context of `pipe`, in retirement order.
struct Retired {
  std::vector<std::string> labels;
  std::vector<int> values;
  explicit Retired(swp::Pipeline<Ctx>& pipe) {
    pipe.on_retire([this](const Ctx& ctx) {
      labels.push_back(ctx.label);
      values.push_back(ctx.value);
    });
  }
  Retired(const Retired&) = delete;
  Retired& operator=(const Retired&) = delete;
};

}  // namespace

TEST_CASE("a task function takes the context, optionally the scope, and returns anything") {
  auto plain = [](Ctx&) {};
  auto with_scope = [](Ctx&, swp::TaskScope&) {};
  auto value = [](Ctx&) { return 1.5; };
  auto co = [](Ctx&) -> swp::Co<std::string> { co_return "x"; };
  auto on_fields = [](Fields&) {};  // a base of the context is fine
  static_assert(swp::TaskFunction<decltype(plain), Ctx>);
  static_assert(swp::TaskFunction<decltype(with_scope), Ctx>);
  static_assert(swp::TaskFunction<decltype(value), Ctx>);
  static_assert(swp::TaskFunction<decltype(co), Ctx>);
  static_assert(swp::TaskFunction<decltype(on_fields), Ctx>);
  static_assert(!swp::TaskFunction<decltype(plain), Other>);
  static_assert(!swp::TaskFunction<int, Ctx>);
  static_assert(!swp::TaskFunction<void (*)(Other&), Ctx>);

  static_assert(std::is_same_v<swp::task_value_t<decltype(plain), Ctx>, void>);
  static_assert(std::is_same_v<swp::task_value_t<decltype(value), Ctx>, double>);
  static_assert(std::is_same_v<swp::task_value_t<decltype(co), Ctx>, std::string>);

  static_assert(std::is_constructible_v<swp::TaskBody<Ctx>, decltype(plain)>);
  static_assert(!std::is_constructible_v<swp::TaskBody<Ctx>, decltype([](Other&) {})>);
  static_assert(!std::is_convertible_v<decltype(plain), swp::TaskBody<Ctx>>);  // explicit
}

TEST_CASE("a body makes output storage only when it returns a value") {
  const swp::TaskBody<Ctx> none([](Ctx&) {});
  const swp::TaskBody<Ctx> some([](Ctx&) { return 7; });
  CHECK_FALSE(none.returns_value());
  CHECK(none.call().make_output() == nullptr);
  REQUIRE(some.returns_value());
  const auto box = some.call().make_output();
  REQUIRE(box != nullptr);
  CHECK(box->holds<int>());
  CHECK_FALSE(box->holds<long>());  // typed: no conversion between value types
  CHECK(swp::detail::TypedBox<int>::of(box.get()) != nullptr);
  CHECK(swp::detail::TypedBox<long>::of(box.get()) == nullptr);
}

// Frames made on this thread while one serial iteration of a one-task plan runs `fn`.
template <class Fn>
std::size_t frames_of_one_iteration(Fn fn) {
  swp::Plan<Ctx> plan;
  plan.add("Task", std::move(fn));
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  pipe.run_one_serial_iter(1, 0);  // warm: lanes, streams
  const std::size_t before = swp::detail::frames_allocated_here();
  pipe.run_one_serial_iter(2, 1);
  return swp::detail::frames_allocated_here() - before;
}

TEST_CASE("a body that does not suspend runs without a coroutine frame; a coroutine body with its own") {
  CHECK(frames_of_one_iteration([](Ctx& ctx) { return ctx.batch; }) == 0);
  CHECK(frames_of_one_iteration([](Ctx& ctx) { ctx.value = ctx.batch; }) == 0);
  CHECK(frames_of_one_iteration([](Ctx& ctx) -> swp::Co<int> { co_return ctx.batch; }) == 1);
  CHECK(frames_of_one_iteration([](Ctx&) -> swp::Co<void> { co_return; }) == 1);
}

TEST_CASE("the value a body produces is what the readers get, whatever its form") {
  swp::Plan<Ctx> plan;
  const auto plain = plan.add("Plain", [](Ctx& ctx) { return ctx.batch * 10; });
  const auto co = plan.add("Co", [](Ctx& ctx) -> swp::Co<std::string> {
    co_return "batch " + std::to_string(ctx.batch);
  });
  plan.add("Reader", [plain, co](Ctx& ctx) -> swp::Co<void> {
    ctx.value = co_await ctx.get(plain);
    ctx.label = co_await ctx.get(co);
  }, {}, swp::reads(plain, co));
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  const Retired retired(pipe);
  pipe.run(std::vector<int>{1, 2, 3});
  CHECK(retired.values == std::vector<int>{10, 20, 30});
  CHECK(retired.labels == std::vector<std::string>{"batch 1", "batch 2", "batch 3"});
}

TEST_CASE("copies of a body share its callable") {
  {
    const swp::TaskBody<Ctx> body([counted = Counted{}](Ctx&) { (void)counted; });
    CHECK(Counted::alive == 1);
    const swp::TaskBody<Ctx> copy = body;
    std::vector<swp::TaskBody<Ctx>> more(3, body);
    CHECK(Counted::alive == 1);
  }
  CHECK(Counted::alive == 0);
}

TEST_CASE("pipelines made from one plan run the same callable, which outlives the plan") {
  // The bound body is each pipeline's routine for its task: no copy of the callable per
  // pipeline, state it keeps is kept once, and the pipelines keep it alive without the plan.
  std::optional<swp::ClockPipeline<Ctx>> first, second;
  swp::Runtime rt({.backend = swp::Backend::sim});
  {
    swp::Plan<Ctx> plan;
    plan.add("Count", [counted = Counted{}, n = 0](Ctx& ctx) mutable {
      (void)counted;
      ctx.value = ++n;
    });
    first.emplace(rt, plan);
    second.emplace(rt, plan);
    CHECK(Counted::alive == 1);
  }
  CHECK(Counted::alive == 1);  // the plan is gone; the pipelines hold the body
  const Retired a(*first), b(*second);
  first->run(std::vector<int>{1, 2});
  second->run(std::vector<int>{1, 2});
  CHECK(a.values == std::vector<int>{1, 2});
  CHECK(b.values == std::vector<int>{3, 4});
  first.reset();
  CHECK(Counted::alive == 1);
  second.reset();
  CHECK(Counted::alive == 0);
}

TEST_CASE("a body declares the fields it writes, which a shortcut replays") {
  swp::TaskBody<Ctx> body(
      [](Ctx& ctx) {
        ctx.label = "batch " + std::to_string(ctx.batch);
        ctx.value = ctx.batch;
      },
      swp::writes(&Fields::label));
  CHECK(body.writes.size() == 1);

  swp::Plan<Ctx> plan;
  plan.add(swp::PipelineTask("Label"));
  plan.bind("Label", body);
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  const Retired retired(pipe);
  pipe.enable_shortcut("Label");
  pipe.run_serial(std::vector<int>{1, 2});
  CHECK(retired.labels == std::vector<std::string>{"batch 1", "batch 1"});  // declared: replayed
  CHECK(retired.values == std::vector<int>{1, 0});                          // undeclared: not
}

}  // namespace test_task_body
