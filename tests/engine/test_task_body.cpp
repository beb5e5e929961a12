#include "swp/engine/task_body.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/plan.hpp"

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
  CHECK(none.run);
  CHECK_FALSE(none.make_box);
  REQUIRE(some.make_box);
  const auto box = some.make_box();
  CHECK(dynamic_cast<swp::detail::TypedBox<int>*>(box.get()) != nullptr);
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
  std::vector<std::string> labels;
  std::vector<int> values;
  pipe.on_retire([&](const Ctx& ctx) {
    labels.push_back(ctx.label);
    values.push_back(ctx.value);
  });
  pipe.enable_shortcut("Label");
  pipe.run_serial(std::vector<int>{1, 2});
  CHECK(labels == std::vector<std::string>{"batch 1", "batch 1"});  // declared: replayed
  CHECK(values == std::vector<int>{1, 0});                          // undeclared: not
}
