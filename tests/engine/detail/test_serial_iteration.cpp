// run_serial_iteration (swp/engine/detail/serial_iteration.hpp), through run_one_serial_iter:
// the tasks run in topological order with ties by name, observed as in a pipelined run; a
// task's error stops the iteration there; a body that can never finish is reported, not hung;
// a run in progress is refused; the waits for device work on "default" (before slot 0 is
// reused, and with retire_after_device before the iteration retires, which it then does not
// where that work failed: a callable's error, a fault).

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
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
#include "swp/async/co.hpp"
#include "swp/async/future.hpp"
#include "swp/device/device_fault.hpp"
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

// Runs `call` on a thread of its own and waits up to 60 s for it: what it threw (nullptr: it
// returned), or, when it hangs, a failed test instead of a hung suite (the thread is left).
std::exception_ptr within_a_minute(std::function<void()> call) {
  auto outcome = std::make_shared<std::promise<std::exception_ptr>>();
  std::future<std::exception_ptr> done = outcome->get_future();
  std::thread runner([call = std::move(call), outcome] {
    try {
      call();
      outcome->set_value(nullptr);
    } catch (...) {
      outcome->set_value(std::current_exception());
    }
  });
  if (done.wait_for(60s) != std::future_status::ready) {
    runner.detach();
    FAIL("the serial run hangs");
    return nullptr;
  }
  runner.join();
  return done.get();
}

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
  const std::exception_ptr error = within_a_minute([&] { pipe->run_one_serial_iter(0, 3); });
  const std::string what = swp::test::message_of<swp::PipelineTimeout>(error);
  CHECK(what.starts_with("serial iteration 3 did not finish within 100 ms; unfinished:"));
  CHECK(swp::test::contains(what,
                            "Wait (iter 3) on lane 'io', stream 'default': its body is "
                            "suspended in an await"));
  CHECK(told == std::vector<std::string>{what});
  // The pipeline is whole: the next serial iteration and a run go on (numbered after 3).
  never.set_value();
  CHECK(within_a_minute([&] { pipe->run_one_serial_iter(1, 4); }) == nullptr);
  CHECK(within_a_minute([&] { pipe->run(std::vector<int>{1}); }) == nullptr);
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
    const std::exception_ptr error = within_a_minute([&] { pipe->run_one_serial_iter(0, 0); });
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
    const std::exception_ptr error = within_a_minute([&] {
      pipe->run_serial(std::vector<int>{0, 1, 2, 3});
    });
    CHECK(cancelled);
    CHECK(swp::test::message_of<swp::Cancelled>(error) == "pipeline cancelled: enough");
    CHECK(retired == std::vector<std::int64_t>{0, 1});
  }
  // Nothing is left cancelled: the next serial run runs.
  CHECK_FALSE(pipe->cancel("nothing runs"));
  if (!never.ready()) never.set_value();
  CHECK(within_a_minute([&] { pipe->run_one_serial_iter(0, 10); }) == nullptr);
}

namespace {

struct Written {
  int written = 0;  // what the iteration's device work writes (10 * batch)
};
using WrittenCtx = swp::IterContext<int, Written>;

// The device work of serial iterations 1..3 (by batch) on a host runtime without workers:
// on "default" each waits for its gate, then writes the context. The gate is a runnable
// posted to the runtime's scheduler, which (no workers) runs only on a thread that drives
// it: the serial call while it waits for device work, never while it runs a synchronous body
// or on_retire. So whether the call waited before on_retire does not depend on timing. The
// work also goes on once on_retire saw its iteration (on_retire came first: the wait is off
// or missing), so nothing hangs then.
struct DeviceGates {
  struct Gate final : swp::Runnable {
    DeviceGates* owner = nullptr;
    bool opened = false;  // under owner->mutex
    void run() noexcept override {
      const std::lock_guard lock(owner->mutex);
      opened = true;
      owner->changed.notify_all();
    }
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::array<Gate, 4> gates;  // by batch, 1..3
  int retired = 0;            // how many iterations on_retire saw (batches in order)

  DeviceGates() {
    for (Gate& gate : gates) gate.owner = this;
  }
  // On "default": posts the gate of `batch` and waits for it (60 s: a bound, not a timing).
  void await(swp::Scheduler& scheduler, int batch) {
    Gate& gate = gates.at(static_cast<std::size_t>(batch));
    scheduler.post(gate);
    std::unique_lock lock(mutex);
    (void)changed.wait_for(lock, std::chrono::seconds(60),
                           [&] { return gate.opened || retired >= batch; });
  }
  // From on_retire, after it read the context: what it saw, as "<batch> wrote <written>, gate
  // open|shut" (shut: its device work had not run).
  std::string retire(const WrittenCtx& ctx) {
    const std::string saw = std::to_string(ctx.batch) + " wrote " + std::to_string(ctx.written);
    const std::lock_guard lock(mutex);
    const bool opened = gates.at(static_cast<std::size_t>(ctx.batch)).opened;
    ++retired;
    changed.notify_all();
    return saw + (opened ? ", gate open" : ", gate shut");
  }
};

swp::Plan<WrittenCtx> gated_plan(swp::Runtime& rt, DeviceGates& gates) {
  swp::Plan<WrittenCtx> plan;
  plan.add("Work",
           [&rt, &gates](WrittenCtx& ctx, swp::TaskScope& task) {
             // Serial: on "default". Slot 0 keeps this context until that work completed.
             task.enqueue([&rt, &gates, &ctx, batch = ctx.batch] {
               gates.await(rt.scheduler(), batch);
               ctx.written = 10 * batch;
             });
           },
           {.stage = 0, .stream = "work"});
  return plan;
}

// Serial iterations of batches 1, 2, 3 (numbered 0, 1, 2), by run_serial or by
// run_one_serial_iter calls (the subcases).
void run_three_serially(swp::Pipeline<WrittenCtx>& pipe) {
  SUBCASE("run_serial") {
    swp::RunStats stats;
    CHECK(within_a_minute([&] { stats = pipe.run_serial(std::vector<int>{1, 2, 3}); }) ==
          nullptr);
    CHECK(stats.iterations == 3);
  }
  SUBCASE("run_one_serial_iter") {
    CHECK(within_a_minute([&] {
            for (int batch = 1; batch <= 3; ++batch) pipe.run_one_serial_iter(batch, batch - 1);
            pipe.synchronize();
          }) == nullptr);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("with retire_after_device a serial iteration retires after its device work",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // on_retire ran as soon as the bodies returned: it read slot 0 before the host stream
  // wrote the result there (every iteration: "wrote 0, gate shut").
  DeviceGates gates;  // outlives the runtime: a gate may still be queued on its scheduler
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 0});
  auto pipe = Engine::template make<WrittenCtx>(rt, gated_plan(rt, gates), 2);
  pipe->set_timeouts({.retire = 60s, .drain = 30s});  // far: a bound, not a timing
  pipe->retire_after_device();
  std::vector<std::string> seen;
  pipe->on_retire([&](const WrittenCtx& ctx) { seen.push_back(gates.retire(ctx)); });
  run_three_serially(*pipe);
  CHECK(seen == std::vector<std::string>{"1 wrote 10, gate open", "2 wrote 20, gate open",
                                         "3 wrote 30, gate open"});
}

TEST_CASE_TEMPLATE("without retire_after_device a serial iteration retires as its bodies return",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Unchanged by the wait above: no wait for the device work before on_retire.
  DeviceGates gates;
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 0});
  auto pipe = Engine::template make<WrittenCtx>(rt, gated_plan(rt, gates), 2);
  pipe->set_timeouts({.retire = 60s, .drain = 30s});
  std::vector<std::string> seen;
  pipe->on_retire([&](const WrittenCtx& ctx) { seen.push_back(gates.retire(ctx)); });
  run_three_serially(*pipe);
  CHECK(seen == std::vector<std::string>{"1 wrote 0, gate shut", "2 wrote 0, gate shut",
                                         "3 wrote 0, gate shut"});
}

TEST_CASE_TEMPLATE("cancel() ends a serial iteration's wait to retire after its device work",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Virtual time: the device work writes the context at 10 ms; cancel() comes at 5 ms, from
  // another stream, while the serial iteration waits to retire. Without the wait it retired
  // at 0 (reading "written" 0) and the call returned.
  swp::Runtime rt({.backend = swp::Backend::sim});
  std::vector<int> bodies;
  swp::Plan<WrittenCtx> plan;
  plan.add("Work",
           [&bodies](WrittenCtx& ctx, swp::TaskScope& task) {
             bodies.push_back(ctx.batch);
             task.device_work(10ms);
             task.enqueue([&ctx] { ctx.written = 10 * ctx.batch; });
           },
           {.stage = 0, .stream = "work"});
  auto pipe = Engine::template make<WrittenCtx>(rt, plan, 2);
  pipe->retire_after_device();
  std::vector<std::pair<int, int>> retired;  // (batch, written) as on_retire saw them
  pipe->on_retire([&](const WrittenCtx& ctx) { retired.emplace_back(ctx.batch, ctx.written); });
  std::vector<std::string> told;
  pipe->on_run_failed([&](const std::exception_ptr& why) {
    told.push_back(swp::test::message_of<swp::Cancelled>(why));
  });
  const auto start = rt.now();
  bool cancelled = false;
  swp::Stream& other = rt.stream("other");
  other.enqueue_work(5ms);
  other.enqueue([&] { cancelled = pipe->cancel("enough"); });
  SUBCASE("run_one_serial_iter") {
    CHECK_THROWS_WITH_AS(pipe->run_one_serial_iter(1, 0), "pipeline cancelled: enough",
                         swp::Cancelled);
  }
  SUBCASE("run_serial: no later iteration starts") {
    CHECK_THROWS_WITH_AS(pipe->run_serial(std::vector<int>{1, 2}), "pipeline cancelled: enough",
                         swp::Cancelled);
  }
  CHECK(cancelled);
  CHECK(rt.now() == start + 5ms);
  CHECK(bodies == std::vector<int>{1});
  CHECK(retired.empty());  // the cancelled iteration does not retire
  CHECK(told == std::vector<std::string>{"pipeline cancelled: enough"});
  // Its device work is still waited for before slot 0 is reused (until 10 ms); the next one
  // retires once its own completed (20 ms).
  pipe->run_one_serial_iter(3, 5);
  CHECK(retired == std::vector<std::pair<int, int>>{{3, 30}});
  CHECK(rt.now() == start + 20ms);
}

TEST_CASE_TEMPLATE("with retire_after_device a serial iteration whose device work hangs fails",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // It returned (or run_serial went on) with on_retire having read an unwritten context.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::atomic<int> bodies{0};
  swp::Plan<WrittenCtx> plan;
  plan.add("Work",
           [opened, &bodies](WrittenCtx& ctx, swp::TaskScope& task) {
             ++bodies;
             task.enqueue([opened, &ctx] {
               // Batch 1's is held on "default" until the gate opens; 60 s: a bound.
               if (ctx.batch == 1) (void)opened.wait_for(60s);
               ctx.written = 10 * ctx.batch;
             });
           },
           {.stage = 0, .stream = "work"});
  auto pipe = Engine::template make<WrittenCtx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 100ms, .check_interval = 5ms, .drain = 30s});
  pipe->retire_after_device();
  std::vector<std::string> told;
  pipe->on_run_failed([&](const std::exception_ptr& why) {
    told.push_back(swp::test::message_of<swp::PipelineTimeout>(why));
  });
  std::vector<std::pair<int, int>> retired;  // (batch, written) as on_retire saw them
  pipe->on_retire([&](const WrittenCtx& ctx) { retired.emplace_back(ctx.batch, ctx.written); });
  std::exception_ptr error;
  SUBCASE("run_one_serial_iter") {
    error = within_a_minute([&] { pipe->run_one_serial_iter(1, 0); });
  }
  SUBCASE("run_serial: no later iteration starts") {
    error = within_a_minute([&] { pipe->run_serial(std::vector<int>{1, 2}); });
  }
  // Not REQUIRE: the held work must be let go (below) before the pipeline is destroyed.
  CHECK_MESSAGE(error != nullptr, "the serial iteration retired before its device work");
  const std::string what = error ? swp::test::message_of<swp::PipelineTimeout>(error) : "";
  CHECK(what.starts_with(
      "device work of serial iterations on stream 'default' did not complete within 100 ms, "
      "so serial iteration 0 cannot retire"));
  CHECK(told == std::vector<std::string>{what});
  CHECK(bodies.load() == 1);
  CHECK(retired.empty());  // the failed iteration does not retire
  gate.set_value();
  // The hung work is waited for again before slot 0 is reused; then the next one retires.
  CHECK(within_a_minute([&] { pipe->run_one_serial_iter(2, 1); }) == nullptr);
  CHECK(retired == std::vector<std::pair<int, int>>{{2, 20}});
  pipe->synchronize();
}

namespace {

// Copy then Launch (serial order: by name), both queueing work on their stream ("default" in
// a serial iteration). Launch's callable writes 10 * batch, and throws for batch `throws`;
// for batch `faults` Launch first faults the stream, so its callable does not run.
swp::Plan<WrittenCtx> launch_plan(int throws, int faults) {
  swp::Plan<WrittenCtx> plan;
  plan.add("Copy", [](WrittenCtx&, swp::TaskScope& task) { task.enqueue([] {}); },
           {.stage = 0, .stream = "work"});
  plan.add("Launch",
           [throws, faults](WrittenCtx& ctx, swp::TaskScope& task) {
             if (ctx.batch == faults) task.stream().enqueue_fault("illegal address in 'gather'");
             task.enqueue([throws, &ctx] {
               if (ctx.batch == throws) throw std::runtime_error("launch failed");
               ctx.written = 10 * ctx.batch;
             });
           },
           {.stage = 0, .stream = "work"});
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE(
    "with retire_after_device a serial iteration whose callable threw does not retire", Engine,
    swp::test::UseClock, swp::test::UseDataFlow) {
  // It retired, on_retire reading what its failed work did not write, and the TaskError came
  // only from run_serial's end (or synchronize()). Now the serial call throws it before
  // on_retire, as a pipelined run with retire_after_device fails before the iteration retires.
  for (auto backend : {swp::Backend::host, swp::Backend::sim})
    for (bool one_by_one : {false, true}) {  // run_serial, or run_one_serial_iter calls
      CAPTURE(swp::backend_name(backend));
      CAPTURE(one_by_one);
      swp::Runtime rt({.backend = backend, .workers = 1});
      auto pipe = Engine::template make<WrittenCtx>(rt, launch_plan(2, -1), 2);
      pipe->set_timeouts({.retire = 60s, .drain = 30s});
      pipe->retire_after_device();
      std::vector<std::pair<int, int>> retired;  // (batch, written) as on_retire saw them
      pipe->on_retire([&](const WrittenCtx& ctx) { retired.emplace_back(ctx.batch, ctx.written); });
      int told = 0;  // on_run_failed: not told, as for a serial body's error
      pipe->on_run_failed([&](const std::exception_ptr&) { ++told; });
      std::exception_ptr error;
      if (one_by_one) {
        CHECK(within_a_minute([&] { pipe->run_one_serial_iter(1, 0); }) == nullptr);
        error = within_a_minute([&] { pipe->run_one_serial_iter(2, 1); });
      } else {  // no later iteration starts
        error = within_a_minute([&] { pipe->run_serial(std::vector<int>{1, 2, 3}); });
      }
      REQUIRE_MESSAGE(error != nullptr, "the callable's error did not surface");
      try {
        std::rethrow_exception(error);
      } catch (const swp::TaskError& e) {
        CHECK(e.task() == "Launch");
        CHECK(e.iter() == 1);
        CHECK(std::string(e.what()) == "task 'Launch' failed in iteration 1: launch failed");
      } catch (...) {
        FAIL("not a TaskError: " << swp::test::message_of<std::exception>(error));
      }
      CHECK(retired == std::vector<std::pair<int, int>>{{1, 10}});  // iteration 1 did not retire
      CHECK(told == 0);
      CHECK_NOTHROW(pipe->synchronize());  // reported once: taken by the serial iteration
      // The next serial iteration is not held back by it.
      CHECK(within_a_minute([&] { pipe->run_one_serial_iter(3, 7); }) == nullptr);
      CHECK(retired == std::vector<std::pair<int, int>>{{1, 10}, {3, 30}});
      CHECK_NOTHROW(pipe->synchronize());
    }
}

TEST_CASE_TEMPLATE("with retire_after_device a serial iteration whose device work faulted fails",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Its callable did not run on the faulted stream: it retired with 0 written, and the next
  // one too, until run_serial's end threw the bare DeviceFault. Now, as a pipelined run's
  // iteration with retire_after_device: a TaskError naming the task and iteration, nesting the
  // DeviceFault. One event covers the serial iteration's work on "default", so the task named
  // is the first one that queued work there (Copy, not Launch, which faulted it).
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    auto pipe = Engine::template make<WrittenCtx>(rt, launch_plan(-1, 2), 2);
    pipe->set_timeouts({.retire = 60s, .drain = 30s});
    pipe->retire_after_device();
    std::vector<std::pair<int, int>> retired;  // (batch, written) as on_retire saw them
    pipe->on_retire([&](const WrittenCtx& ctx) { retired.emplace_back(ctx.batch, ctx.written); });
    const auto expect_fault = [](const std::exception_ptr& error, std::int64_t iter) {
      REQUIRE_MESSAGE(error != nullptr, "the device fault did not surface");
      try {
        std::rethrow_exception(error);
      } catch (const swp::TaskError& e) {
        CHECK(e.task() == "Copy");
        CHECK(e.iter() == iter);
        CHECK(std::string(e.what()) == "task 'Copy' failed in iteration " + std::to_string(iter) +
                                           ": stream 'default' faulted: illegal address in "
                                           "'gather'");
        CHECK_THROWS_AS(std::rethrow_exception(e.nested()), swp::DeviceFault);
      } catch (...) {
        FAIL("not a TaskError: " << swp::test::message_of<std::exception>(error));
      }
    };
    expect_fault(within_a_minute([&] { pipe->run_serial(std::vector<int>{1, 2, 3}); }), 1);
    CHECK(retired == std::vector<std::pair<int, int>>{{1, 10}});
    // The stream stays faulted (as a GPU's context does): the next one fails the same way.
    expect_fault(within_a_minute([&] { pipe->run_one_serial_iter(4, 7); }), 7);
    CHECK(retired == std::vector<std::pair<int, int>>{{1, 10}});
    CHECK_THROWS_AS(pipe->synchronize(), swp::DeviceFault);
  }
}

TEST_CASE_TEMPLATE(
    "a serial iteration is not charged the unreported callable error of an earlier one of its "
    "number",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Iteration 5's callable threw with retire_after_device off: kept, unreported. Then, with it
  // on, a second serial iteration numbered 5 took that error as its own (same iteration, same
  // task) and did not retire, though its own callable succeeded; synchronize() then had
  // nothing left to report. Now the old error waits for synchronize(), and comes once.
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    auto pipe = Engine::template make<WrittenCtx>(rt, launch_plan(1, -1), 2);
    pipe->set_timeouts({.retire = 60s, .drain = 30s});
    std::vector<std::pair<int, int>> retired;  // (batch, written) as on_retire saw them
    pipe->on_retire([&](const WrittenCtx& ctx) { retired.emplace_back(ctx.batch, ctx.written); });
    CHECK(within_a_minute([&] { pipe->run_one_serial_iter(1, 5); }) == nullptr);
    pipe->retire_after_device();
    CHECK(within_a_minute([&] { pipe->run_one_serial_iter(2, 5); }) == nullptr);
    // Batch 1's callable threw before writing; batch 2 retired after its own wrote.
    CHECK(retired == std::vector<std::pair<int, int>>{{1, 0}, {2, 20}});
    // The earlier one's error is reported where it was without the second: by synchronize().
    const std::exception_ptr error = within_a_minute([&] { pipe->synchronize(); });
    REQUIRE_MESSAGE(error != nullptr, "the earlier iteration's error was lost");
    try {
      std::rethrow_exception(error);
    } catch (const swp::TaskError& e) {
      CHECK(e.task() == "Launch");
      CHECK(e.iter() == 5);
      CHECK(std::string(e.what()) == "task 'Launch' failed in iteration 5: launch failed");
    } catch (...) {
      FAIL("not a TaskError: " << swp::test::message_of<std::exception>(error));
    }
    CHECK_NOTHROW(pipe->synchronize());  // once
  }
}

}  // namespace test_serial_iteration
