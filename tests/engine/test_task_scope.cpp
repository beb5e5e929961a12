#include "swp/engine/task_scope.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/engines.hpp"
#include "support/include_closure.hpp"
#include "support/text.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_task_scope {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

}  // namespace

TEST_CASE("task_scope.hpp is public: no engine core inside, no constructor for users") {
  const auto closure = swp::test::include_closure("swp/engine/task_scope.hpp");
  CHECK(closure.count("swp/engine/detail/instance.hpp") == 1);  // the closure is read
  CHECK(closure.count("swp/engine/detail/engine_core.hpp") == 0);
  // The engine core makes one per task instance; neither it nor an instance is a user's.
  static_assert(!std::is_constructible_v<swp::TaskScope, swp::detail::EngineCore&,
                                         swp::detail::Instance&>);
  static_assert(!std::is_constructible_v<swp::TaskScope, const swp::PlanGraph&, swp::Runtime&,
                                         swp::detail::Instance&>);
  static_assert(!std::is_constructible_v<swp::TaskScope, swp::detail::Instance&>);
  // One per task and context slot: it holds its instance, and reaches the rest through it.
  static_assert(sizeof(swp::TaskScope) == sizeof(void*));
}

TEST_CASE_TEMPLATE("a scope names its task, iteration and runtime in every context slot", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::sim});
  struct Seen {
    std::string name;
    swp::TaskIndex task;
    std::int64_t iter;
    swp::Runtime* runtime;
  };
  std::vector<Seen> seen;
  swp::Plan<Ctx> plan;
  for (const char* name : {"first", "second"})
    plan.add(name, [&seen](Ctx&, swp::TaskScope& scope) {
      seen.push_back({scope.name(), scope.task(), scope.iter(), &scope.runtime()});
    });
  plan.intra_iter_deps.push_back({"second", "first"});
  auto pipe = Engine::template make<Ctx>(rt, plan);
  pipe->run(std::vector<int>(5, 0));  // more iterations than context slots: every slot's scopes
  REQUIRE(seen.size() == 10);
  std::set<std::pair<std::string, std::int64_t>> instances;
  for (const Seen& s : seen) {
    CAPTURE(s.name);
    CAPTURE(s.iter);
    REQUIRE(s.task < plan.tasks.size());
    CHECK(plan.tasks[s.task].task.name == s.name);
    CHECK(s.runtime == &rt);
    instances.emplace(s.name, s.iter);
  }
  std::set<std::pair<std::string, std::int64_t>> expected;
  for (std::int64_t i = 0; i < 5; ++i) {
    expected.emplace("first", i);
    expected.emplace("second", i);
  }
  CHECK(instances == expected);
}

TEST_CASE_TEMPLATE("a callable a task queues on its stream is ordered before its consumers' work",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    constexpr int iterations = 12;
    // Written and read on the streams' threads only, one element per iteration; read here after
    // run(), which synchronizes the streams.
    std::vector<int> produced(iterations, 0), consumed(iterations, -1);
    swp::Runtime rt({.backend = backend, .workers = 2});
    swp::Plan<Ctx> plan;
    plan.add("Produce", [&produced](Ctx& ctx, swp::TaskScope& scope) {
      const auto i = static_cast<std::size_t>(ctx.iter_idx);
      const int batch = ctx.batch;
      scope.enqueue([&produced, i, batch] { produced[i] = 2 * batch; }, 5ms);
    }, {.stage = 0, .stream = "gpu"});
    // On another stream: its stream waits for Produce's event (phase 2), so the callable reads
    // what Produce's callable wrote, although Produce's body returned long before.
    plan.add("Consume", [&produced, &consumed](Ctx& ctx, swp::TaskScope& scope) {
      const auto i = static_cast<std::size_t>(ctx.iter_idx);
      scope.enqueue([&produced, &consumed, i] { consumed[i] = produced[i] + 1; }, 1ms);
    }, {.stage = 1, .stream = "copy"});
    plan.intra_iter_deps.push_back({"Consume", "Produce"});
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    std::vector<int> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(100 + i);
    CHECK(pipe->run(batches).iterations == iterations);
    for (int i = 0; i < iterations; ++i) {
      CAPTURE(i);
      CHECK(consumed[static_cast<std::size_t>(i)] == 2 * (100 + i) + 1);
    }
  }
}

namespace {

// A plan whose task "Launch" queues a callable on its stream "gpu" that throws in iteration
// `broken` (and only there).
swp::Plan<Ctx> throwing_callable_plan(std::int64_t broken) {
  swp::Plan<Ctx> plan;
  plan.add("Load", [](Ctx&) {}, {.stage = 0, .thread_group = "io"});
  plan.add("Launch",
           [broken](Ctx& ctx, swp::TaskScope& scope) {
             const std::int64_t iter = ctx.iter_idx;
             scope.enqueue(
                 [iter, broken] {
                   if (iter == broken) throw std::runtime_error("kernel of iteration 2 broke");
                 },
                 1ms);
           },
           {.stage = 1, .stream = "gpu", .thread_group = "compute"});
  plan.intra_iter_deps.push_back({"Launch", "Load"});
  return plan;
}

// The error a TaskError `e` carries names Launch, iteration 2 and the callable's message.
void check_launch_2(const swp::TaskError& e) {
  CHECK(e.task() == "Launch");
  CHECK(e.iter() == 2);
  CHECK(std::string(e.what()) ==
        "task 'Launch' failed in iteration 2: kernel of iteration 2 broke");
  CHECK_THROWS_AS(std::rethrow_exception(e.nested()), std::runtime_error);
}

}  // namespace

TEST_CASE_TEMPLATE(
    "a callable queued with enqueue that throws is its task's failure in its iteration", Engine,
    swp::test::UseClock, swp::test::UseDataFlow) {
  // It surfaced bare, from the stream's next synchronize(), naming neither task nor iteration;
  // and retiring after the device, iteration 2 retired as if it had succeeded.
  const std::string what = "task 'Launch' failed in iteration 2: kernel of iteration 2 broke";
  enum class Way { after_device, after_device_skip, run, serial };
  for (auto backend : {swp::Backend::host, swp::Backend::sim})
    for (Way way : {Way::after_device, Way::after_device_skip, Way::run, Way::serial}) {
      CAPTURE(swp::backend_name(backend));
      CAPTURE(static_cast<int>(way));
      swp::Runtime rt({.backend = backend, .workers = 2});
      auto pipe = Engine::template make<Ctx>(rt, throwing_callable_plan(2), 2);
      std::vector<std::int64_t> retired;
      std::vector<std::pair<std::int64_t, std::string>> failed;
      pipe->on_retire([&](const Ctx& ctx) { retired.push_back(ctx.iter_idx); });
      pipe->on_failure([&](const Ctx& ctx, const std::exception_ptr& why) {
        failed.emplace_back(ctx.iter_idx, swp::test::message_of<std::exception>(why));
      });
      const std::vector<int> batches{0, 1, 2, 3, 4, 5};
      switch (way) {
        case Way::after_device:  // fail_run: the run fails with its TaskError
          pipe->retire_after_device();
          pipe->fill_pipeline(batches);
          try {
            while (pipe->progress()) {
            }
            FAIL("the callable's error did not fail the run");
          } catch (const swp::TaskError& e) {
            check_launch_2(e);
          }
          CHECK(std::find(retired.begin(), retired.end(), 2) == retired.end());
          CHECK(std::find(failed.begin(), failed.end(),
                          std::pair<std::int64_t, std::string>{2, what}) != failed.end());
          break;
        case Way::after_device_skip: {  // iteration 2 retires failed, the run goes on
          pipe->retire_after_device();
          pipe->set_failure_policy(swp::FailurePolicy::skip);
          pipe->fill_pipeline(batches);
          std::vector<std::int64_t> came_back_failed;
          while (auto iter = pipe->progress())
            if (iter->failed()) came_back_failed.push_back(iter->iter());
          CHECK(came_back_failed == std::vector<std::int64_t>{2});
          CHECK(retired == std::vector<std::int64_t>{0, 1, 3, 4, 5});
          CHECK(failed == std::vector<std::pair<std::int64_t, std::string>>{{2, what}});
          break;
        }
        case Way::run:  // retiring at submission: run() fails with its TaskError
          try {
            pipe->run(batches);
            FAIL("the callable's error did not surface");
          } catch (const swp::TaskError& e) {
            check_launch_2(e);
          }
          break;
        case Way::serial:
          try {
            pipe->run_serial(batches);
            FAIL("the callable's error did not surface");
          } catch (const swp::TaskError& e) {
            check_launch_2(e);
          }
          break;
      }
      pipe->synchronize();  // reported once: nothing is left for a later synchronize
    }
}

TEST_CASE_TEMPLATE("a task's sleep_for ends with the run's cancellation, not its duration", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    const bool sim = backend == swp::Backend::sim;
    swp::Runtime rt({.backend = backend, .workers = 2});
    std::atomic<int> sleeping{0};
    std::atomic<int> woke_cancelled{0};
    swp::Pipeline<Ctx>* pipe_ptr = nullptr;
    swp::Plan<Ctx> plan;
    plan.add(
        "Sleep",
        [&](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
          ++sleeping;
          try {
            co_await scope.sleep_for(1h);
          } catch (const swp::Cancelled&) {
            ++woke_cancelled;
            throw;
          }
        },
        {.stage = 0, .thread_group = "sleepers"});
    if (sim) {
      // One thread, virtual time: a task beside it cancels the run after 1 ms of CPU time.
      plan.add(
          "Cancel",
          [&](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
            co_await scope.cpu_work(1ms);
            pipe_ptr->cancel("shutdown");
          },
          {.stage = 0, .thread_group = "canceller"});
    }
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    pipe_ptr = pipe.get();
    pipe->fill_pipeline(std::vector<int>{1, 2, 3, 4});
    std::thread canceller;
    if (!sim) {
      canceller = std::thread([&] {
        while (sleeping.load() == 0) std::this_thread::yield();
        pipe->cancel("shutdown");
      });
    }
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(static_cast<void>(pipe->progress()), "pipeline cancelled: shutdown",
                         swp::Cancelled);
    if (canceller.joinable()) canceller.join();
    CHECK(woke_cancelled.load() >= 1);
    CHECK(woke_cancelled.load() == sleeping.load());  // every sleeper woke, none timed out
    CHECK(std::chrono::steady_clock::now() - start < 10min);
    if (sim) CHECK(rt.now() - swp::Clock::time_point{} < 1h);  // no hour of virtual time
  }
}

}  // namespace test_task_scope
