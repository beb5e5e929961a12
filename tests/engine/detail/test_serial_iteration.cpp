// run_serial_iteration (swp/engine/detail/serial_iteration.hpp), through run_one_serial_iter:
// the tasks run in topological order with ties by name, observed as in a pipelined run; a
// task's error stops the iteration there; a body that can never finish is reported, not hung;
// a run in progress is refused; the waits for device work on "default" before slot 0 is
// reused. With retire_after_device: test_serial_retire_after_device.cpp.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/engines.hpp"
#include "support/run_trace.hpp"
#include "support/text.hpp"
#include "support/within_a_minute.hpp"
#include "swp/async/co.hpp"
#include "swp/async/future.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_observer.hpp"
#include "swp/engine/task_scope.hpp"

namespace test_serial_iteration {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<int>;

// What the observer saw, as "released|started|finished Task iter".
struct Log final : swp::TaskObserver {
  std::vector<std::string> events;
  std::vector<std::string> names;  // task names by index (set by the test)
  void task_released(swp::TaskIndex t, std::int64_t iter, const swp::Lane&) noexcept override {
    events.push_back("released " + names.at(t) + " " + std::to_string(iter));
  }
  void task_started(swp::TaskIndex t, std::int64_t iter, const swp::Lane&) noexcept override {
    events.push_back("started " + names.at(t) + " " + std::to_string(iter));
  }
  void task_finished(swp::TaskIndex t, std::int64_t iter, const swp::Lane&,
                     bool ok) noexcept override {
    events.push_back((ok ? "finished " : "failed ") + names.at(t) + " " + std::to_string(iter));
  }
};

// What the bodies ran, as "<task><batch>", in order. Locked: in a pipelined run B and C run
// at once on different lanes.
struct Ran {
  std::mutex mutex;
  std::vector<std::string> names;
  void add(std::string name) {
    const std::lock_guard lock(mutex);
    names.push_back(std::move(name));
  }
  std::vector<std::string> take() {
    const std::lock_guard lock(mutex);
    return std::exchange(names, {});
  }
};

// B and C depend on A, D on both; added in the order D, C, B, A, so neither the insertion
// order nor the index gives the serial order. `throws`: the task whose body throws.
swp::Plan<Ctx> diamond(Ran& ran, const std::string& throws = "") {
  swp::Plan<Ctx> plan;
  for (const std::string name : {"D", "C", "B", "A"})
    plan.add(name,
             [&ran, name, throws](Ctx& ctx) {
               ran.add(name + std::to_string(ctx.batch));
               if (name == throws) throw std::runtime_error("broken " + name);
             },
             {.stage = 0, .thread_group = "lane_" + name});
  plan.intra_iter_deps = {{"B", "A"}, {"C", "A"}, {"D", "B"}, {"D", "C"}};
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE("a serial iteration runs the tasks in topological order, ties by name, observed",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 2});
  Ran ran;
  const swp::Plan<Ctx> plan = diamond(ran);
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  Log log;
  for (const char* name : {"D", "C", "B", "A"}) log.names.push_back(name);
  pipe->set_observer(&log);
  pipe->run_one_serial_iter(5, 9);
  CHECK(ran.take() == std::vector<std::string>{"A5", "B5", "C5", "D5"});
  std::vector<std::string> expected;
  for (const char* name : {"A", "B", "C", "D"})
    for (const char* event : {"released ", "started ", "finished "})
      expected.push_back(std::string(event) + name + " 9");
  CHECK(log.events == expected);
}

TEST_CASE_TEMPLATE("a task's error ends the serial iteration there, naming the task", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 1});
  Ran ran;
  auto pipe = Engine::template make<Ctx>(rt, diamond(ran, "B"), 2);
  try {
    pipe->run_one_serial_iter(1, 4);
    FAIL("the task's error did not surface");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "B");
    CHECK(e.iter() == 4);
    CHECK(swp::test::contains(e.what(), "broken B"));
  }
  CHECK(ran.take() == std::vector<std::string>{"A1", "B1"});  // C and D did not run
  // The next serial iteration starts afresh.
  CHECK_THROWS_AS(pipe->run_one_serial_iter(2, 5), swp::TaskError);
  CHECK(ran.take() == std::vector<std::string>{"A2", "B2"});
}

TEST_CASE_TEMPLATE("a serial body that waits for what no task provides is reported, not hung",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Promise<> never;
  swp::Plan<Ctx> plan;
  plan.add("Wait", [&never](Ctx&) -> swp::Co<void> { co_await never.get_future(); },
           {.stage = 0, .thread_group = "io"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  CHECK_THROWS_WITH_AS(pipe->run_one_serial_iter(0, 3),
                       "serial iteration 3: task 'Wait' can never finish (it waits for "
                       "something no task will provide)",
                       swp::PipelineTimeout);
}

TEST_CASE_TEMPLATE("a serial iteration is refused while a run is in progress", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 1});
  Ran ran;
  auto pipe = Engine::template make<Ctx>(rt, diamond(ran), 2);
  pipe->fill_pipeline(std::vector<int>{0, 1, 2});
  CHECK(pipe->progress());
  CHECK_THROWS_AS(pipe->run_one_serial_iter(7, 0), swp::PipelineStateError);
  pipe->drain();
  (void)ran.take();
  pipe->run_one_serial_iter(7, 0);
  CHECK(ran.take() == std::vector<std::string>{"A7", "B7", "C7", "D7"});
}

TEST_CASE_TEMPLATE("a refused run_one_serial_iter leaves the contexts of the run as they were",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Slot 0 was written before the state check: the refused call gave an iteration in flight
  // (or the one retired last) the serial call's batch and number.
  for (const unsigned workers : {0u, 2u}) {
    CAPTURE(workers);
    swp::Runtime rt({.workers = workers});
    swp::Plan<Ctx> plan;
    auto load = plan.add("Load", [](Ctx&) {}, {.stage = 0, .thread_group = "load"});
    plan.add("Work", [](Ctx&) {}, {.stage = 1, .thread_group = "work"}, swp::reads(load));
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    std::vector<std::pair<std::int64_t, int>> retired;  // (iter_idx, batch) as on_retire saw it
    std::string from_callback;
    pipe->on_retire([&](const Ctx& ctx) {
      retired.emplace_back(ctx.iter_idx, ctx.batch);
      if (ctx.iter_idx == 4) {
        try {
          pipe->run_one_serial_iter(999, 77);
        } catch (const swp::PipelineStateError& e) {
          from_callback = e.what();
        }
      }
    });
    std::vector<int> batches;
    for (int i = 0; i < 8; ++i) batches.push_back(100 + i);
    pipe->fill_pipeline(batches);
    for (int i = 0; i < 3; ++i) REQUIRE(pipe->progress());
    CHECK_THROWS_AS(pipe->run_one_serial_iter(999, 77), swp::PipelineStateError);
    while (pipe->progress()) {
    }
    std::vector<std::pair<std::int64_t, int>> expected;
    for (int i = 0; i < 8; ++i) expected.emplace_back(i, 100 + i);
    CHECK(retired == expected);
    CHECK(swp::test::contains(from_callback, "run_one_serial_iter"));
    // Between runs it runs, as before.
    retired.clear();
    pipe->run_one_serial_iter(5, 50);
    CHECK(retired == std::vector<std::pair<std::int64_t, int>>{{50, 5}});
  }
}

TEST_CASE_TEMPLATE("a run after a serial iteration waits for its device work on the default stream",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // run_one_serial_iter left its device work queued on "default", and the run after it
  // reused slot 0 at once: on sim its device work ran at the same virtual time as the serial
  // iteration's.
  using namespace std::chrono_literals;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("Work", [](Ctx&, swp::TaskScope& task) { task.device_work(10ms); },
           {.stage = 0, .stream = "work", .thread_group = "work"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  swp::test::RunTrace trace;
  trace.attach(rt.stream("default"));
  trace.attach(rt.stream("work"));
  pipe->run_one_serial_iter(0, 1);  // slot 0, which the run reuses
  pipe->run(std::vector<int>{2, 3});
  const auto device = trace.device();
  REQUIRE(device.size() == 3);
  const auto& serial = device.at({0, 1});
  CHECK(serial.stream == "default");
  for (const std::int64_t iter : {2, 3}) {
    CAPTURE(iter);
    CHECK(device.at({0, iter}).stream == "work");
    CHECK(device.at({0, iter}).start >= serial.end);
  }
}

TEST_CASE_TEMPLATE("a run after a serial iteration whose device work hangs fails naming the stream",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  using namespace std::chrono_literals;
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  swp::Plan<Ctx> plan;
  plan.add("Work",
           [opened](Ctx& ctx, swp::TaskScope& task) {
             // Held on "default" (serial) until the gate opens; 60 s: a bound, not a timing.
             if (ctx.iter_idx == 1) task.enqueue([opened] { (void)opened.wait_for(60s); });
           },
           {.stage = 0, .stream = "work", .thread_group = "work"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 100ms, .check_interval = 5ms});
  pipe->run_one_serial_iter(0, 1);
  try {
    pipe->fill_pipeline(std::vector<int>{2});
    FAIL("the run started while the serial iteration's device work ran");
  } catch (const swp::PipelineTimeout& e) {
    CHECK(std::string(e.what()).starts_with(
        "device work of serial iterations on stream 'default' did not complete within 100 ms"));
  }
  gate.set_value();
  pipe->run(std::vector<int>{2});  // waited for again, and done now
  CHECK(pipe->next_iteration() == 3);
}

TEST_CASE_TEMPLATE("a serial iteration waits for the device work of the one before it",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The device work reads the context when it ends (10 ms of virtual time in). Without the
  // wait the second serial iteration wrote slot 0 at once, so the first one's work read
  // batch 2; its body also started at virtual time 0, under that work.
  using namespace std::chrono_literals;
  swp::Runtime rt({.backend = swp::Backend::sim});
  std::vector<int> seen;                    // what each device work read, in order
  std::vector<swp::Clock::time_point> ran;  // when each body started
  swp::Plan<Ctx> plan;
  plan.add("Work",
           [&](Ctx& ctx, swp::TaskScope& task) {
             ran.push_back(rt.now());
             task.device_work(10ms);
             task.enqueue([&seen, &ctx] { seen.push_back(ctx.batch); });
           },
           {.stage = 0, .stream = "work"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  const auto start = rt.now();
  SUBCASE("back-to-back run_one_serial_iter") {
    pipe->run_one_serial_iter(1, 0);
    CHECK(rt.now() == start);  // it returned without waiting for its own device work
    pipe->run_one_serial_iter(2, 1);
    pipe->synchronize();
  }
  SUBCASE("run_serial") { pipe->run_serial(std::vector<int>{1, 2}); }
  CHECK(seen == std::vector<int>{1, 2});
  REQUIRE(ran.size() == 2);
  CHECK(ran[0] == start);
  CHECK(ran[1] == start + 10ms);
}

TEST_CASE_TEMPLATE("cancel() ends a serial iteration's wait for the device work before it",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Virtual time: the first iteration's device work ends at 10 ms; cancel() comes at 5 ms,
  // from another stream, while the second iteration waits. A wait that ignored it ran on
  // until 10 ms (that work read the context: `seen` not empty).
  using namespace std::chrono_literals;
  swp::Runtime rt({.backend = swp::Backend::sim});
  std::vector<int> seen;
  std::vector<int> bodies;
  swp::Plan<Ctx> plan;
  plan.add("Work",
           [&](Ctx& ctx, swp::TaskScope& task) {
             bodies.push_back(ctx.batch);
             task.device_work(10ms);
             task.enqueue([&seen, &ctx] { seen.push_back(ctx.batch); });
           },
           {.stage = 0, .stream = "work"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  const auto start = rt.now();
  pipe->run_one_serial_iter(1, 0);
  bool cancelled = false;
  swp::Stream& other = rt.stream("other");
  other.enqueue_work(5ms);
  other.enqueue([&] { cancelled = pipe->cancel("enough"); });
  CHECK_THROWS_WITH_AS(pipe->run_one_serial_iter(2, 1), "pipeline cancelled: enough",
                       swp::Cancelled);
  CHECK(cancelled);
  CHECK(rt.now() == start + 5ms);
  CHECK(seen.empty());
  CHECK(bodies == std::vector<int>{1});  // the second iteration's did not run
  pipe->run_one_serial_iter(3, 2);       // waits for the first one's work again
  pipe->synchronize();
  CHECK(seen == std::vector<int>{1, 3});
}

TEST_CASE_TEMPLATE("a serial iteration after one whose device work hangs fails naming the stream",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  using namespace std::chrono_literals;
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::atomic<int> bodies{0};
  swp::Plan<Ctx> plan;
  plan.add("Work",
           [opened, &bodies](Ctx& ctx, swp::TaskScope& task) {
             ++bodies;
             // Held on "default" until the gate opens; 60 s: a bound, not a timing.
             if (ctx.batch == 1) task.enqueue([opened] { (void)opened.wait_for(60s); });
           },
           {.stage = 0, .stream = "work"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 100ms, .check_interval = 5ms});
  int failures = 0;
  pipe->on_run_failed([&failures](const std::exception_ptr&) { ++failures; });
  std::vector<int> retired;  // slot 0's context as each serial iteration retired
  pipe->on_retire([&retired](const Ctx& ctx) { retired.push_back(ctx.batch); });
  pipe->run_one_serial_iter(1, 0);
  try {
    pipe->run_one_serial_iter(2, 1);
    FAIL("the serial iteration wrote slot 0 while the one before it had device work running");
  } catch (const swp::PipelineTimeout& e) {
    CHECK(std::string(e.what()).starts_with(
        "device work of serial iterations on stream 'default' did not complete within 100 ms, "
        "so serial iteration 1 cannot start"));
  }
  CHECK(bodies.load() == 1);
  CHECK(failures == 1);
  gate.set_value();
  pipe->run_one_serial_iter(2, 1);  // waited for again, and done now
  CHECK(bodies.load() == 2);
  CHECK(retired == std::vector<int>{1, 2});
  pipe->synchronize();
}

namespace {

using namespace std::chrono_literals;

// A plan whose task "Wait" awaits `never`, noting that it started.
swp::Plan<Ctx> waiting_plan(swp::Promise<>& never, std::atomic<bool>& started) {
  swp::Plan<Ctx> plan;
  plan.add("Wait",
           [&never, &started](Ctx&) -> swp::Co<void> {
             started.store(true);
             co_await never.get_future();
           },
           {.stage = 0, .thread_group = "io"});
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE("a serial iteration on the host has the retire deadline and names what hangs",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // It had none: a body awaiting a future nobody completes hung run_one_serial_iter forever.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  swp::Promise<> never;
  std::atomic<bool> started{false};
  auto pipe = Engine::template make<Ctx>(rt, waiting_plan(never, started), 2);
  pipe->set_timeouts({.retire = 100ms, .check_interval = 5ms, .drain = 30s});
  std::vector<std::string> told;  // on_run_failed, as for a pipelined run's deadline
  pipe->on_run_failed([&](const std::exception_ptr& why) {
    told.push_back(swp::test::message_of<swp::PipelineTimeout>(why));
  });
  const std::exception_ptr error =
      swp::test::within_a_minute([&] { pipe->run_one_serial_iter(0, 3); });
  const std::string what = swp::test::message_of<swp::PipelineTimeout>(error);
  CHECK(what.starts_with("serial iteration 3 did not finish within 100 ms; unfinished:"));
  CHECK(swp::test::contains(what,
                            "Wait (iter 3) on lane 'io', stream 'default': its body is "
                            "suspended in an await"));
  CHECK(told == std::vector<std::string>{what});
  // The pipeline is whole: the next serial iteration and a run go on (numbered after 3).
  never.set_value();
  CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(1, 4); }) == nullptr);
  CHECK(swp::test::within_a_minute([&] { pipe->run(std::vector<int>{1}); }) == nullptr);
}

TEST_CASE_TEMPLATE("cancel() ends a serial iteration and run_serial as it ends a run", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // cancel() returned false (no run in flight) and the serial iteration went on waiting.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  swp::Promise<> never;
  std::atomic<bool> started{false};
  auto pipe = Engine::template make<Ctx>(rt, waiting_plan(never, started), 2);
  pipe->set_timeouts({.retire = 60s, .drain = 30s});  // far: the cancel must end it
  SUBCASE("run_one_serial_iter") {
    std::atomic<bool> cancelled{false};
    std::thread canceller([&] {
      while (!started.load()) std::this_thread::yield();
      cancelled.store(pipe->cancel("shutdown"));
    });
    const std::exception_ptr error =
        swp::test::within_a_minute([&] { pipe->run_one_serial_iter(0, 0); });
    canceller.join();
    CHECK(cancelled.load());
    CHECK(swp::test::message_of<swp::Cancelled>(error) == "pipeline cancelled: shutdown");
  }
  std::vector<std::int64_t> retired;  // outlives the subcases, as on_retire does
  bool cancelled = false;
  SUBCASE("run_serial, from on_retire: the batches after it do not run") {
    never.set_value();
    pipe->on_retire([&](const Ctx& ctx) {
      retired.push_back(ctx.iter_idx);
      if (ctx.iter_idx == 1) cancelled = pipe->cancel("enough");
    });
    const std::exception_ptr error = swp::test::within_a_minute([&] {
      pipe->run_serial(std::vector<int>{0, 1, 2, 3});
    });
    CHECK(cancelled);
    CHECK(swp::test::message_of<swp::Cancelled>(error) == "pipeline cancelled: enough");
    CHECK(retired == std::vector<std::int64_t>{0, 1});
  }
  // Nothing is left cancelled: the next serial run runs.
  CHECK_FALSE(pipe->cancel("nothing runs"));
  if (!never.ready()) never.set_value();
  CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(0, 10); }) == nullptr);
}

}  // namespace test_serial_iteration
