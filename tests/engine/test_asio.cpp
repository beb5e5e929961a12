#include "swp/engine/asio.hpp"

#include <doctest/doctest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

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
    CHECK(f.get() == expected);
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
                                                               std::optional<std::int64_t> i) {
    CHECK_FALSE(e);
    ran_on = std::this_thread::get_id();
    got = i;
  }));
  CHECK(got == -1);  // not inline
  // run() returns only once the handler ran: the pending step counts as work on `io`.
  io.run();
  CHECK(got == 0);
  CHECK(ran_on == std::this_thread::get_id());
  pipe.drain();
}

TEST_CASE_TEMPLATE("async_progress honours its handler's cancellation slot: the run ends, the step fails",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto type : {boost::asio::cancellation_type::terminal,
                    boost::asio::cancellation_type::partial,
                    boost::asio::cancellation_type::total}) {
    CAPTURE(static_cast<int>(type));
    swp::Runtime rt({.workers = 2});
    // A task that, in the first run, awaits a future nobody completes (a cancellable wait).
    std::atomic<bool> block{true};
    std::atomic<int> blocked{0};
    swp::Promise<int> never;
    const swp::Future<int> never_done = never.get_future();
    swp::Plan<Ctx> plan;
    plan.add("Wait", [&](Ctx&) -> swp::Co<void> {
      if (!block.load()) co_return;
      ++blocked;
      (void)co_await never_done;
    }, {.stage = 0});
    plan.add("Later", [](Ctx&) {}, {.stage = 1});  // the clock engine has a second period
    auto made = Engine::template make<Ctx>(rt, plan, 2);
    swp::Pipeline<Ctx>& pipe = *made;
    pipe.fill_pipeline(std::vector<int>{1, 2, 3});
    boost::asio::cancellation_signal signal;
    auto step = swp::async_progress(
        pipe, boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
    while (blocked.load() == 0) std::this_thread::yield();
    signal.emit(type);
    CHECK_THROWS_WITH_AS(static_cast<void>(step.get()),
                         "pipeline cancelled: async_progress cancelled", swp::Cancelled);
    block = false;
    CHECK(pipe.run(std::vector<int>{4, 5}).iterations == 2);  // refillable
  }
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
  std::function<void(std::exception_ptr, std::optional<std::int64_t>)> step =
      [&](std::exception_ptr e, std::optional<std::int64_t> i) {
        REQUIRE_FALSE(e);
        if (!i) return;
        events.push_back("retired " + std::to_string(*i));
        if (*i == 2) pipe.close_submissions();
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
  std::function<void(std::exception_ptr, std::optional<std::int64_t>)> step =
      [&](std::exception_ptr e, std::optional<std::int64_t> i) {
        REQUIRE_FALSE(e);
        seen.push_back(i);
        if (i) swp::async_progress(pipe, step);
      };
  swp::async_progress(pipe, step);
  io.restart();
  io.run();
  CHECK(batches == std::vector<int>{1});  // 2 was never taken
  CHECK(seen == std::vector<std::optional<std::int64_t>>{0, std::nullopt});
}

}  // namespace test_asio
