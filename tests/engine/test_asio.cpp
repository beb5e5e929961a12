#include "swp/engine/asio.hpp"

#include <doctest/doctest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/stop_scope.hpp"
#include "swp/engine/task_scope.hpp"

namespace test_asio {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

swp::Plan<Ctx> one_task_plan() {
  swp::Plan<Ctx> plan;
  plan.add("Load", [](Ctx& ctx) {
    if (ctx.batch < 0) throw std::runtime_error("negative batch");
  }, {.stage = 0});
  return plan;
}

}  // namespace

TEST_CASE("async_progress with use_future completes with each retired iteration, then empty") {
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, one_task_plan(), 2);
  pipe.fill_pipeline(std::vector<int>{1, 2});
  for (std::optional<std::int64_t> expected : {std::optional<std::int64_t>{0}, {1}, {}}) {
    std::future<std::optional<swp::Retired<Ctx>>> f =
        swp::async_progress(pipe, boost::asio::use_future);
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    CHECK(swp::test::iter_of(f.get()) == expected);
  }
  pipe.drain();
}

TEST_CASE("async_progress delivers a task's error as the handler's exception_ptr") {
  swp::Runtime rt({.workers = 1});
  swp::ClockPipeline<Ctx> pipe(rt, one_task_plan());
  pipe.fill_pipeline(std::vector<int>{-1});
  auto f = swp::async_progress(pipe, boost::asio::use_future);
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  CHECK_THROWS_AS(f.get(), swp::TaskError);
  CHECK(pipe.run(std::vector<int>{1}).iterations == 1);  // drained: it runs again
}

TEST_CASE("the handler runs on its associated executor, never inline, and keeps it busy") {
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, one_task_plan(), 2);
  pipe.fill_pipeline(std::vector<int>{1});
  boost::asio::io_context io;
  std::thread::id ran_on;
  std::optional<std::int64_t> got{-1};
  swp::async_progress(pipe, boost::asio::bind_executor(io, [&](std::exception_ptr e,
                                                               std::optional<swp::Retired<Ctx>> i) {
    CHECK_FALSE(e);
    ran_on = std::this_thread::get_id();
    got = swp::test::iter_of(i);
  }));
  CHECK(got == -1);  // not inline
  // run() returns only once the handler ran: the pending step counts as work on `io`.
  io.run();
  CHECK(got == 0);
  CHECK(ran_on == std::this_thread::get_id());
  pipe.drain();
}

namespace {

// A plan whose first task waits (cancellably) at a gate until it opens: the run cannot retire
// anything meanwhile, so a step waits.
struct Gated {
  std::atomic<int> arrived{0};
  swp::Promise<int> gate;
  swp::Future<int> opened = gate.get_future();
  std::vector<int> retired;  // batches, in retirement order (on_retire, on the driving thread)

  swp::Plan<Ctx> plan() {
    swp::Plan<Ctx> plan;
    plan.add("Wait", [this](Ctx&) -> swp::Co<void> {
      ++arrived;
      (void)co_await opened;
    }, {.stage = 0});
    plan.add("Later", [](Ctx&) {}, {.stage = 1});  // the clock engine has a second period
    return plan;
  }
  void wait_until_arrived() const {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (arrived.load() == 0) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::yield();
    }
  }
};

}  // namespace

TEST_CASE("an Asio handler's pipe.cancel() wakes a task sleeping on the runtime; the step fails") {
  // The lanes and the driver on one io_context; a timer's handler ends the run, as a
  // service's signal_set handler would.
  boost::asio::io_context io;
  swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
  std::atomic<int> sleeping{0}, woke{0};
  swp::Plan<Ctx> plan;
  plan.add("Sleep", [&](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    ++sleeping;
    try {
      co_await scope.sleep_for(1h);
    } catch (const swp::Cancelled&) {
      ++woke;
      throw;
    }
  }, {.stage = 0});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  pipe.fill_pipeline(std::vector<int>{1, 2, 3});
  std::exception_ptr step_error;
  bool done = false;
  swp::async_progress(pipe, [&](std::exception_ptr e, std::optional<swp::Retired<Ctx>>) {
    step_error = e;
    done = true;
  });
  boost::asio::steady_timer shutdown(io, 20ms);
  shutdown.async_wait([&](boost::system::error_code) { pipe.cancel("shutdown"); });
  io.run_for(30s);
  REQUIRE(done);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(step_error), "pipeline cancelled: shutdown",
                       swp::Cancelled);
  CHECK(sleeping.load() >= 1);
  CHECK(woke.load() == sleeping.load());
}

TEST_CASE_TEMPLATE("async_progress's cancellation of any type ends the wait; the run goes on",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  using boost::asio::cancellation_type;
  for (auto type : {cancellation_type::terminal, cancellation_type::partial,
                    cancellation_type::total, cancellation_type::all}) {
    CAPTURE(static_cast<int>(type));
    swp::Runtime rt({.workers = 2});
    Gated g;
    auto made = Engine::template make<Ctx>(rt, g.plan(), 2);
    swp::Pipeline<Ctx>& pipe = *made;
    pipe.on_retire([&g](const Ctx& c) { g.retired.push_back(c.batch); });
    pipe.fill_pipeline(std::vector<int>{1, 2, 3});
    boost::asio::cancellation_signal signal;
    auto step = swp::async_progress(
        pipe, boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
    g.wait_until_arrived();
    signal.emit(type);
    REQUIRE(step.wait_for(30s) == std::future_status::ready);
    CHECK_THROWS_WITH_AS(static_cast<void>(step.get()),
                         "async_progress cancelled: the wait ends, the run goes on",
                         swp::Cancelled);
    CHECK(g.retired.empty());
    // The same run goes on: every iteration retires, in order, once.
    g.gate.set_value(1);
    std::vector<std::int64_t> iters;
    for (;;) {
      auto next = swp::async_progress(pipe, boost::asio::use_future);
      REQUIRE(next.wait_for(30s) == std::future_status::ready);
      auto r = next.get();
      if (!r) break;
      iters.push_back(r->iter());
    }
    CHECK(iters == std::vector<std::int64_t>{0, 1, 2});
    CHECK(g.retired == std::vector<int>{1, 2, 3});
  }
}

TEST_CASE_TEMPLATE("async_progress || a timer, and wait_for_one, leave the run going between rounds",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The everyday Asio idiom: wait for the next iteration or a timeout, whichever comes first,
  // and go round again. The gate opens after the third timeout; each iteration must reach the
  // loop once, in order, and no round may cancel the run.
  for (bool parallel_group : {false, true}) {
    CAPTURE(parallel_group);
    boost::asio::io_context io;
    swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
    Gated g;
    auto made = Engine::template make<Ctx>(rt, g.plan(), 2);
    swp::Pipeline<Ctx>& pipe = *made;
    pipe.on_retire([&g](const Ctx& c) { g.retired.push_back(c.batch); });
    pipe.fill_pipeline(std::vector<int>{1, 2, 3, 4, 5});
    int timeouts = 0;
    std::vector<std::int64_t> iters;
    std::exception_ptr failure;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          using namespace boost::asio::experimental::awaitable_operators;
          boost::asio::steady_timer timer(io);
          for (;;) {
            timer.expires_after(5ms);
            std::optional<swp::Retired<Ctx>> r;
            bool timed_out = false;
            if (parallel_group) {
              auto [order, e1, got, e2] =
                  co_await boost::asio::experimental::make_parallel_group(
                      swp::async_progress(pipe, boost::asio::deferred),
                      timer.async_wait(boost::asio::deferred))
                      .async_wait(boost::asio::experimental::wait_for_one(),
                                  boost::asio::use_awaitable);
              timed_out = order[0] == 1;
              if (!timed_out) {
                if (e1) std::rethrow_exception(e1);
                r = std::move(got);
              }
            } else {
              auto result = co_await (swp::async_progress(pipe, boost::asio::use_awaitable) ||
                                      timer.async_wait(boost::asio::use_awaitable));
              timed_out = result.index() == 1;
              if (!timed_out) r = std::move(std::get<0>(result));
            }
            if (timed_out) {
              if (++timeouts == 3) g.gate.set_value(1);
              continue;
            }
            if (!r) break;
            iters.push_back(r->iter());
          }
        },
        [&](std::exception_ptr e) { failure = e; });
    io.run_for(30s);
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        FAIL("the loop failed: " << e.what());
      }
    }
    CHECK(timeouts >= 3);
    CAPTURE(timeouts);
    CAPTURE(iters.size());
    CAPTURE(g.retired.size());
    CHECK(g.retired == std::vector<int>{1, 2, 3, 4, 5});
    // The loop saw each iteration at most once, in order; one that retired just as a timer
    // won was dropped with the losing branch (on_retire saw it).
    for (std::size_t i = 1; i < iters.size(); ++i) CHECK(iters[i] > iters[i - 1]);
    CHECK(iters.size() <= 5);
  }
}

TEST_CASE_TEMPLATE("next(token, StopScope::wait) ends the wait; next(token) ends the run", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 2});
  Gated g;
  auto made = Engine::template make<Ctx>(rt, g.plan(), 2);
  swp::Pipeline<Ctx>& pipe = *made;
  pipe.fill_pipeline(std::vector<int>{1, 2});
  std::stop_source stop;
  std::thread stopper([&] {
    g.wait_until_arrived();
    stop.request_stop();
  });
  CHECK_THROWS_WITH_AS(
      static_cast<void>(swp::sync_wait(pipe.next(stop.get_token(), swp::StopScope::wait))),
      "wait stopped; the run goes on", swp::Cancelled);
  stopper.join();
  // Stopped already: the wait ends at once, the run is still there.
  CHECK_THROWS_AS(
      static_cast<void>(swp::sync_wait(pipe.next(stop.get_token(), swp::StopScope::wait))),
      swp::Cancelled);
  g.gate.set_value(1);
  std::vector<std::int64_t> iters;
  while (auto r = swp::sync_wait(pipe.next())) iters.push_back(r->iter());
  CHECK(iters == std::vector<std::int64_t>{0, 1});
  // StopScope::run is next(token): the run ends.
  pipe.fill_pipeline(std::vector<int>{3});
  CHECK_THROWS_WITH_AS(
      static_cast<void>(swp::sync_wait(pipe.next(stop.get_token(), swp::StopScope::run))),
      "pipeline cancelled: stop requested", swp::Cancelled);
}

TEST_CASE("async_submit feeds the push form; a full queue's submit completes as batches are admitted") {
  boost::asio::io_context io;
  swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
  swp::DataFlowPipeline<Ctx> pipe(rt, one_task_plan(), 1);
  std::vector<int> retired_batches;
  pipe.on_retire([&](const Ctx& c) { retired_batches.push_back(c.batch); });
  pipe.fill_submissions(1);
  std::vector<std::string> events;
  for (int b : {10, 11, 12}) {
    swp::async_submit(pipe, b, [&events, b](std::exception_ptr e) {
      events.push_back((e ? "failed " : "queued ") + std::to_string(b));
    });
  }
  std::function<void(std::exception_ptr, std::optional<swp::Retired<Ctx>>)> step =
      [&](std::exception_ptr e, std::optional<swp::Retired<Ctx>> i) {
        REQUIRE_FALSE(e);
        if (!i) return;
        events.push_back("retired " + std::to_string(i->iter()));
        if (i->iter() == 2) pipe.close_submissions();
        swp::async_progress(pipe, step);
      };
  swp::async_progress(pipe, step);
  io.run();
  CHECK(retired_batches == std::vector<int>{10, 11, 12});
  // Every submit completed once; 12 waited for room (capacity 1) until 10 was admitted.
  CHECK(std::count(events.begin(), events.end(), "queued 10") == 1);
  CHECK(std::count(events.begin(), events.end(), "queued 11") == 1);
  CHECK(std::count(events.begin(), events.end(), "queued 12") == 1);
  CHECK(std::count(events.begin(), events.end(), "retired 2") == 1);
}

TEST_CASE("async_submit honours its cancellation slot: the batch is not taken, the run goes on") {
  boost::asio::io_context io;
  swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
  swp::DataFlowPipeline<Ctx> pipe(rt, one_task_plan(), 1);
  pipe.fill_submissions(1);
  int first = 1;
  REQUIRE(pipe.try_submit(first));  // full now: nothing admits until progress runs
  boost::asio::cancellation_signal cancel;
  std::exception_ptr error;
  bool done = false;
  swp::async_submit(pipe, 2,
                    boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                      error = e;
                      done = true;
                    }));
  io.poll();
  CHECK_FALSE(done);  // waits for room
  cancel.emit(boost::asio::cancellation_type::terminal);
  io.poll();
  REQUIRE(done);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(error), "async_submit cancelled", swp::Cancelled);
  pipe.close_submissions();
  std::vector<int> batches;
  pipe.on_retire([&](const Ctx& c) { batches.push_back(c.batch); });
  std::vector<std::optional<std::int64_t>> seen;
  std::function<void(std::exception_ptr, std::optional<swp::Retired<Ctx>>)> step =
      [&](std::exception_ptr e, std::optional<swp::Retired<Ctx>> i) {
        REQUIRE_FALSE(e);
        seen.push_back(swp::test::iter_of(i));
        if (i) swp::async_progress(pipe, step);
      };
  swp::async_progress(pipe, step);
  io.restart();
  io.run();
  CHECK(batches == std::vector<int>{1});  // 2 was never taken
  CHECK(seen == std::vector<std::optional<std::int64_t>>{0, std::nullopt});
}

}  // namespace test_asio
