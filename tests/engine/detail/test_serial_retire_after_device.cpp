// run_serial_iteration (swp/engine/detail/serial_iteration.hpp) with retire_after_device,
// through run_one_serial_iter and run_serial: the iteration retires only once its device work
// on "default" completed, and does not retire where that work failed (a callable's error, a
// fault), which is thrown as its task's TaskError; cancel() and the retire deadline end the
// wait; an unreported error of an earlier serial iteration of the same number is not charged
// to a later one.

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/engines.hpp"
#include "support/text.hpp"
#include "support/within_a_minute.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_scope.hpp"

namespace test_serial_retire_after_device {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

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
    CHECK(swp::test::within_a_minute([&] {
            stats = pipe.run_serial(std::vector<int>{1, 2, 3});
          }) == nullptr);
    CHECK(stats.iterations == 3);
  }
  SUBCASE("run_one_serial_iter") {
    CHECK(swp::test::within_a_minute([&] {
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
    error = swp::test::within_a_minute([&] { pipe->run_one_serial_iter(1, 0); });
  }
  SUBCASE("run_serial: no later iteration starts") {
    error = swp::test::within_a_minute([&] { pipe->run_serial(std::vector<int>{1, 2}); });
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
  CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(2, 1); }) == nullptr);
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
        CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(1, 0); }) == nullptr);
        error = swp::test::within_a_minute([&] { pipe->run_one_serial_iter(2, 1); });
      } else {  // no later iteration starts
        error = swp::test::within_a_minute([&] { pipe->run_serial(std::vector<int>{1, 2, 3}); });
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
      CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(3, 7); }) == nullptr);
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
    expect_fault(swp::test::within_a_minute([&] {
                   pipe->run_serial(std::vector<int>{1, 2, 3});
                 }),
                 1);
    CHECK(retired == std::vector<std::pair<int, int>>{{1, 10}});
    // The stream stays faulted (as a GPU's context does): the next one fails the same way.
    expect_fault(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(4, 7); }), 7);
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
    CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(1, 5); }) == nullptr);
    pipe->retire_after_device();
    CHECK(swp::test::within_a_minute([&] { pipe->run_one_serial_iter(2, 5); }) == nullptr);
    // Batch 1's callable threw before writing; batch 2 retired after its own wrote.
    CHECK(retired == std::vector<std::pair<int, int>>{{1, 0}, {2, 20}});
    // The earlier one's error is reported where it was without the second: by synchronize().
    const std::exception_ptr error = swp::test::within_a_minute([&] { pipe->synchronize(); });
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

}  // namespace test_serial_retire_after_device
