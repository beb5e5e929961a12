// swp::Retired: progress(), next() and async_progress() complete with the retired iteration's
// number, context and task values, intact until the next retirement. Both engines.

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
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

TEST_CASE("a Retired converts to its iteration number") {
  Handles h;
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan(h), 2);
  std::vector<std::int64_t> seen;
  for (std::int64_t iter : pipe.iterations(batches(4))) seen.push_back(iter);
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2, 3});
  pipe.fill_pipeline(batches(1));
  const std::optional<std::int64_t> index = pipe.progress();  // numbers go on across runs
  CHECK(index == 4);
  pipe.drain();
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

}  // namespace test_retired
