// Pipeline::cancel and next(std::stop_token): user cancellation of a run in flight (DESIGN
// decision 7), on both engines.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
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

TEST_CASE_TEMPLATE("cancel() after a run ended returns false; the pipeline refills and drains",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 2});
    Blocking b;
    b.block = false;
    const auto plan = b.plan();
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    pipe->fill_pipeline(batches(3));
    while (pipe->progress()) {
    }
    CHECK_FALSE(pipe->cancel("too late"));  // nothing in flight: nothing to cancel
    CHECK_FALSE(pipe->progress());           // still the end, no Cancelled
    pipe->drain();                           // nothing to rethrow
    pipe->fill_pipeline(batches(2));  // the ended run goes on
    std::vector<std::int64_t> retired;
    while (auto i = pipe->progress()) retired.push_back(i->iter());
    CHECK(retired == std::vector<std::int64_t>{3, 4});
  }
}

TEST_CASE_TEMPLATE("the between-runs setters are accepted once a run ended, refused in flight",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Blocking b;
  b.block = false;
  const auto plan = b.plan();
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->fill_pipeline(batches(4));
  CHECK(swp::test::iter_of(pipe->progress()) == 0);
  CHECK_THROWS_WITH_AS(pipe->set_failure_policy(swp::FailurePolicy::skip),
                       doctest::Contains("set_failure_policy while a run is in progress"),
                       swp::PipelineStateError);
  CHECK_THROWS_AS(pipe->retire_after_device(), swp::PipelineStateError);
  CHECK_THROWS_AS(pipe->enable_shortcut("Load"), swp::PipelineStateError);
  while (pipe->progress()) {
  }
  // Ended: every setter is fine, and the run may still go on with a new fill.
  pipe->set_failure_policy(swp::FailurePolicy::skip);
  pipe->retire_after_device();
  pipe->enable_shortcut("Load");
  pipe->disable_shortcut();
  pipe->on_run_failed([](const std::exception_ptr&) {});
  pipe->fill_pipeline(batches(2));
  std::vector<std::int64_t> retired;
  while (auto i = pipe->progress()) retired.push_back(i->iter());
  CHECK(retired == std::vector<std::int64_t>{4, 5});
  CHECK(pipe->failure_policy() == swp::FailurePolicy::skip);
  // A serial iteration ends an ended run for good; the next fill starts a new one, numbered
  // after the serial iteration's 6 (a pipeline never reuses an iteration number).
  pipe->run_one_serial_iter(7, 6);
  pipe->fill_pipeline(batches(1));
  CHECK(swp::test::iter_of(pipe->progress()) == 7);
}

TEST_CASE_TEMPLATE("cancels before, during, racing with the end of, and after a run; refill after each",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // 1,000 rounds (issue 58, also under TSan), four kinds in turn: cancel() before the fill
  // (nothing to cancel), while a body waits (the run throws Cancelled), from another thread
  // at a varying moment racing with the run's end, and after the run ended (nothing to
  // cancel). Whatever cancel() returned says what the run did: true, and it threw Cancelled;
  // false, and it ended normally. Then a refill must run whole.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  Blocking b;
  const auto plan = b.plan();
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = std::chrono::seconds(30), .drain = std::chrono::seconds(30)});
  std::atomic<int> retired{0};
  pipe->on_retire([&](const Ctx&) { ++retired; });
  constexpr int rounds = 1000;
  int cancelled_runs = 0, ended_runs = 0;
  for (int round = 0; round < rounds; ++round) {
    const int kind = round % 4;  // 0 before, 1 during, 2 racing, 3 after
    CAPTURE(round);
    b.block = kind == 1;
    const int blocked_before = b.blocked.load();
    std::atomic<bool> go{false};
    std::atomic<bool> result{false};
    if (kind == 0) result = pipe->cancel("race");
    std::thread canceller;
    if (kind == 1 || kind == 2) {
      canceller = std::thread([&, spins = (round / 4) % 64] {
        while (!go.load()) std::this_thread::yield();
        if (kind == 1) {
          while (b.blocked.load() == blocked_before) std::this_thread::yield();
        } else {
          for (int i = 0; i < spins; ++i) std::this_thread::yield();
        }
        result = pipe->cancel("race");
      });
    }
    pipe->fill_pipeline(batches(1 + round % 3));
    go = true;
    bool threw = false;
    try {
      while (pipe->progress()) {
      }
    } catch (const swp::Cancelled& e) {
      threw = true;
      CHECK(std::string(e.what()) == "pipeline cancelled: race");
    }
    if (canceller.joinable()) canceller.join();
    if (kind == 3) result = pipe->cancel("race");
    CHECK(result.load() == threw);  // true exactly when the run was cancelled
    if (kind == 0 || kind == 3) CHECK_FALSE(threw);
    if (kind == 1) CHECK(threw);
    (threw ? cancelled_runs : ended_runs) += 1;
    pipe->drain();  // never rethrows a cancel
    b.block = false;
    const int before = retired.load();
    CHECK(pipe->run(batches(2)).iterations == 2);
    CHECK(retired.load() == before + 2);
  }
  MESSAGE("cancel races: " << rounds << " rounds, " << cancelled_runs << " cancelled, "
                           << ended_runs << " ended first");
}

TEST_CASE_TEMPLATE("on_run_failed is told once, at the failure, with a TaskError naming the task",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  std::atomic<bool> told_before_drain{false};
  std::atomic<int> calls{0};
  std::string what;
  plan.add(
      "Check",
      [load](Ctx& ctx) -> swp::Co<void> {
        if (co_await ctx.get(load) == 3) throw std::runtime_error("corrupt record");
      },
      {.stage = 1}, swp::reads(load));
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->on_run_failed([&](const std::exception_ptr& e) {
    ++calls;
    try {
      std::rethrow_exception(e);
    } catch (const swp::TaskError& t) {
      what = t.what();
    } catch (...) {
      what = "not a TaskError";
    }
  });
  pipe->on_failure([&](const Ctx&, const std::exception_ptr&) {
    told_before_drain = calls.load() == 1;  // the hook ran before the drain reported this
  });
  pipe->fill_pipeline(batches(10));
  CHECK_THROWS_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      swp::TaskError);
  CHECK(calls.load() == 1);
  CHECK(told_before_drain.load());
  CHECK(what == "task 'Check' failed in iteration 3: corrupt record");

  // Skipped iterations do not fail the run: no call. A cancel() does, with its Cancelled.
  pipe->set_failure_policy(swp::FailurePolicy::skip);
  calls = 0;
  pipe->run(batches(5));
  CHECK(calls.load() == 0);
  const std::int64_t first = pipe->next_iteration();
  pipe->fill_pipeline(batches(100));
  CHECK(swp::test::iter_of(pipe->progress()) == first);
  CHECK(pipe->cancel("stop"));
  CHECK_THROWS_AS(static_cast<void>(pipe->progress()), swp::Cancelled);
  CHECK(calls.load() == 1);
  CHECK(what == "not a TaskError");
}

}  // namespace test_pipeline_cancel
