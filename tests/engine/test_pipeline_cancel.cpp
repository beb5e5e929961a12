// Pipeline::cancel and next(std::stop_token): user cancellation of a run in flight (DESIGN
// decision 7), on both engines.

#include <doctest/doctest.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_cancel {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<int>;

// Load, then Wait, which — while `block` is set — says so and awaits a future nobody
// completes: the run cannot go on until it is cancelled (the wait is cancellable).
struct Blocking {
  std::atomic<bool> block{true};
  std::atomic<int> blocked{0};
  std::atomic<int> retired{0};
  swp::Promise<int> never;
  swp::Future<int> never_done = never.get_future();
  swp::Pipeline<Ctx>* pipe = nullptr;
  bool cancel_inside = false;  // Wait cancels the run itself before it blocks (sim)

  swp::Plan<Ctx> plan() {
    swp::Plan<Ctx> plan;
    auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
    plan.add(
        "Wait",
        [this, load](Ctx& ctx) -> swp::Co<void> {
          (void)co_await ctx.get(load);
          if (!block.load()) co_return;
          if (cancel_inside) pipe->cancel("from a task");
          ++blocked;
          (void)co_await never_done;
        },
        {.stage = 1}, swp::reads(load));
    return plan;
  }

  void wait_until_blocked() const {
    while (blocked.load() == 0) std::this_thread::yield();
  }
};

std::vector<int> batches(int n) {
  std::vector<int> b;
  for (int i = 0; i < n; ++i) b.push_back(i);
  return b;
}

// After a cancelled run: nothing left to cancel, and the pipeline runs again.
void check_refillable(swp::Pipeline<Ctx>& pipe, Blocking& b) {
  CHECK_FALSE(pipe.cancel("again"));
  b.block = false;
  CHECK(pipe.run(batches(6)).iterations == 6);
}

}  // namespace

TEST_CASE_TEMPLATE("cancel() from another thread ends a run mid-pipeline, which refills after",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Blocking b;
  const auto plan = b.plan();
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->on_retire([&b](const Ctx&) { ++b.retired; });
  CHECK_FALSE(pipe->cancel("before any run"));
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    b.wait_until_blocked();
    cancelled = pipe->cancel("shutdown");
  });
  pipe->fill_pipeline(batches(100));
  CHECK_THROWS_WITH_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      "pipeline cancelled: shutdown", swp::Cancelled);
  canceller.join();
  CHECK(cancelled.load());
  CHECK(b.retired.load() == 0);  // iteration 0 never retired: nothing after it did either
  check_refillable(*pipe, b);
  CHECK(b.retired.load() == 6);
}

TEST_CASE_TEMPLATE("a task may cancel its own run (sim: one thread, virtual time)", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::sim});
  Blocking b;
  b.cancel_inside = true;
  const auto plan = b.plan();
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  b.pipe = pipe.get();
  pipe->fill_pipeline(batches(10));
  CHECK_THROWS_WITH_AS(static_cast<void>(pipe->progress()), "pipeline cancelled: from a task",
                       swp::Cancelled);
  check_refillable(*pipe, b);
}

TEST_CASE_TEMPLATE("next(stop_token) cancels the run when the token stops while it waits", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Blocking b;
  const auto plan = b.plan();
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  std::stop_source stop;
  std::thread stopper([&] {
    b.wait_until_blocked();
    stop.request_stop();
  });
  pipe->fill_pipeline(batches(50));
  auto drive = [&]() -> swp::Co<int> {
    int retired = 0;
    while (co_await pipe->next(stop.get_token())) ++retired;
    co_return retired;
  };
  CHECK_THROWS_WITH_AS(static_cast<void>(swp::sync_wait(drive())),
                       "pipeline cancelled: stop requested", swp::Cancelled);
  stopper.join();
  check_refillable(*pipe, b);

  // A token stopped before the call cancels at once.
  b.block = true;
  pipe->fill_pipeline(batches(3));
  std::stop_source stopped;
  stopped.request_stop();
  CHECK_THROWS_AS(static_cast<void>(swp::sync_wait(pipe->next(stopped.get_token()))),
                  swp::Cancelled);
  check_refillable(*pipe, b);
}

}  // namespace test_pipeline_cancel
