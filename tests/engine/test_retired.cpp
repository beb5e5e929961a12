// swp::Retired: progress(), next() and async_progress() complete with the retired iteration's
// number, context and task values, intact until the next retirement. Both engines.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "support/engines.hpp"
#include "support/include_closure.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_retired {  // each test file's names apart (unity builds)

namespace {

struct Fields {
  int tripled = 0;
};
using Ctx = swp::IterContext<int, Fields>;

struct Handles {
  swp::Output<int> load;
  swp::Output<int> doubled;
};

// Load (stage 0) -> Double (stage 1, a value) and Triple (stage 1, a context field): the clock
// engine runs stage 1 one period later, so several iterations are in flight at each
// retirement and the next admission reuses a context slot right after it.
swp::Plan<Ctx> plan(Handles& h) {
  swp::Plan<Ctx> plan;
  h.load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  h.doubled = plan.add(
      "Double", [load = h.load](Ctx& ctx) -> swp::Co<int> { co_return 2 * co_await ctx.get(load); },
      {.stage = 1}, swp::reads(h.load));
  plan.add("Triple", [](Ctx& ctx) { ctx.tripled = 3 * ctx.batch; }, {.stage = 1});
  return plan;
}

std::vector<int> batches(int n) {
  std::vector<int> b;
  for (int i = 0; i < n; ++i) b.push_back(100 + i);
  return b;
}

// What a caller reads from a Retired right after it came back: its own iteration's.
void check_intact(const swp::Retired<Ctx>& r, std::int64_t expected, const Handles& h) {
  CHECK(r.iter() == expected);
  CHECK(r.context().iter_idx == expected);
  const int batch = 100 + static_cast<int>(expected);
  CHECK(r.context().batch == batch);
  CHECK(r.context().tripled == 3 * batch);
  CHECK(r.get(h.doubled) == 2 * batch);
  CHECK(r.get(h.load) == batch);
  CHECK_FALSE(r.failed());
}

}  // namespace

TEST_CASE_TEMPLATE("progress() returns the retired iteration's context and values, intact", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  for (int depth : {1, 2, 3}) {
    CAPTURE(depth);
    Handles h;
    swp::Runtime rt({.workers = 2});
    auto pipe = Engine::template make<Ctx>(rt, plan(h), depth);
    pipe->fill_pipeline(batches(12));
    std::int64_t expected = 0;
    while (auto r = pipe->progress()) check_intact(*r, expected++, h);
    CHECK(expected == 12);
  }
}

TEST_CASE_TEMPLATE("next() completes with the retired iteration's context and values", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Handles h;
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, plan(h), 2);
  pipe->fill_pipeline(batches(9));
  const std::int64_t count = swp::sync_wait([&]() -> swp::Co<std::int64_t> {
    std::int64_t n = 0;
    while (auto r = co_await pipe->next()) check_intact(*r, n++, h);
    co_return n;
  }());
  CHECK(count == 9);
}

TEST_CASE("a Retired gives its number through iter() only; iterations() yields the numbers") {
  // No silent conversion: a handle to a slot is never taken for an index by accident.
  static_assert(!std::is_convertible_v<swp::Retired<Ctx>, std::int64_t>);
  static_assert(!std::is_constructible_v<std::int64_t, swp::Retired<Ctx>>);
  static_assert(!std::is_convertible_v<std::optional<swp::Retired<Ctx>>,
                                       std::optional<std::int64_t>>);
  Handles h;
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan(h), 2);
  std::vector<std::int64_t> seen;
  for (std::int64_t iter : pipe.iterations(batches(4))) seen.push_back(iter);
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2, 3});
  pipe.fill_pipeline(batches(1));
  const auto retired = pipe.progress();  // numbers go on across runs
  REQUIRE(retired);
  CHECK(retired->iter() == 4);
  CHECK(retired->context().iter_idx == 4);
  pipe.drain();
}

TEST_CASE("retired.hpp and iter_context.hpp name no engine core, and users cannot make a Retired") {
  // Through the narrow detail headers only (engine_handle.hpp): a user's translation unit
  // that names a context or a Retired does not compile the core's internals.
  for (const char* header : {"swp/engine/retired.hpp", "swp/engine/iter_context.hpp"}) {
    CAPTURE(header);
    const auto closure = swp::test::include_closure(header);
    CHECK(closure.count("swp/engine/detail/engine_handle.hpp") == 1);  // the closure is read
    CHECK(closure.count("swp/engine/detail/engine_core.hpp") == 0);
  }
  // Only the pipeline makes a Retired: its constructor takes the core, an implementation type.
  static_assert(!std::is_constructible_v<swp::Retired<Ctx>, const swp::detail::EngineCore&,
                                         const Ctx&, std::int64_t, std::size_t,
                                         std::exception_ptr>);
}

TEST_CASE("Retired::get names a task of another plan, and a task without a value") {
  Handles h;
  swp::Plan<Ctx> p = plan(h);
  auto nothing = swp::Output<int>{};
  nothing.index = 2;  // Triple returns nothing
  nothing.name = "Triple";
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, p, 2);
  pipe.fill_pipeline(batches(1));
  auto r = pipe.progress();
  REQUIRE(r);
  swp::Output<int> stranger;
  stranger.index = 7;
  stranger.name = "Stranger";
  CHECK_THROWS_WITH_AS((void)r->get(stranger),
                       "Retired::get('Stranger'): not a task of this pipeline's plan",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)r->get(nothing),
                       "Retired::get('Triple'): iteration 0 has no value of the requested type "
                       "from that task",
                       swp::PipelineStateError);
  pipe.drain();
}

namespace {

// A batch that says who still holds it: each iteration's token, watched from outside.
struct Held {
  std::shared_ptr<int> token;
};
struct HeldFields {
  std::shared_ptr<int> copy;  // a field holding the token too
};
using HeldCtx = swp::IterContext<Held, HeldFields>;

}  // namespace

TEST_CASE_TEMPLATE("a retired iteration's batch, fields and values are released at the next step",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Plan<HeldCtx> p;
    auto load = p.add("Load", [](HeldCtx& ctx) { return ctx.batch.token; }, {.stage = 0});
    p.add(
        "Keep",
        [load](HeldCtx& ctx) -> swp::Co<void> { ctx.copy = co_await ctx.get(load); },
        {.stage = 1}, swp::reads(load));
    swp::Runtime rt({.backend = backend, .workers = 2});
    auto pipe = Engine::template make<HeldCtx>(rt, p, 2);
    constexpr int n = 8;
    std::vector<std::weak_ptr<int>> tokens;
    std::vector<Held> batches;
    for (int i = 0; i < n; ++i) {
      batches.push_back({std::make_shared<int>(i)});
      tokens.push_back(batches.back().token);
    }
    pipe->fill_pipeline(std::move(batches));
    std::int64_t expected = 0;
    while (auto r = pipe->progress()) {
      CHECK(r->iter() == expected);
      // Intact until the next step; every iteration retired before it is released.
      CHECK(*r->context().batch.token == expected);
      CHECK(r->context().copy == r->context().batch.token);
      for (std::int64_t i = 0; i < expected; ++i) CHECK(tokens[i].expired());
      ++expected;
    }
    CHECK(expected == n);
    // The run ended: no context, no value holds a batch any more.
    for (const auto& token : tokens) CHECK(token.expired());
  }
}

TEST_CASE_TEMPLATE("a failed run's iterations are released once reported", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Plan<HeldCtx> p;
  p.add(
      "Fail",
      [](HeldCtx& ctx) {
        ctx.copy = ctx.batch.token;
        if (*ctx.batch.token == 2) throw std::runtime_error("bad batch");
      },
      {.stage = 0});
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<HeldCtx>(rt, p, 2);
  // Made as they are asked for: every token made was admitted (none waits in a range).
  std::vector<std::weak_ptr<int>> tokens;
  pipe->fill_pipeline([&]() -> std::optional<Held> {
    if (tokens.size() == 6) return std::nullopt;
    Held held{std::make_shared<int>(static_cast<int>(tokens.size()))};
    tokens.push_back(held.token);
    return held;
  });
  CHECK_THROWS_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      swp::TaskError);
  for (const auto& token : tokens) CHECK(token.expired());
}

}  // namespace test_retired
