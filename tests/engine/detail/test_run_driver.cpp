// RunDriver (swp/engine/detail/run_driver.hpp), through the pipelines it drives: its three
// forms retire the same iterations, an abandoned next() retires nothing and the run goes on, a
// deadlock on virtual time names the iteration, the abort of a failed run hands every
// iteration in flight back, even when reporting them throws, and a second call while one
// drives the run (from a callback, a body or another thread) is refused.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/text.hpp"
#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"

namespace test_run_driver {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

// Load -> Work -> Store, one lane each; Work throws for batch `fails` (none: -1).
swp::Plan<Ctx> chain(int fails = -1) {
  swp::Plan<Ctx> plan;
  plan.add("Load", [](Ctx&) {}, {.stage = 0, .thread_group = "load"});
  plan.add("Work",
           [fails](Ctx& ctx) {
             if (ctx.batch == fails) throw std::runtime_error("bad batch");
           },
           {.stage = 1, .thread_group = "work"});
  plan.add("Store", [](Ctx&) {}, {.stage = 2, .thread_group = "store"});
  plan.intra_iter_deps = {{"Work", "Load"}, {"Store", "Work"}};
  return plan;
}

std::vector<int> batches(int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(i);
  return out;
}

std::vector<std::int64_t> upto(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

swp::Co<void> retire_by_next(swp::Pipeline<Ctx>& pipe, std::vector<std::int64_t>& out) {
  while (const auto retired = co_await pipe.next()) out.push_back(retired->iter());
}

}  // namespace

TEST_CASE_TEMPLATE("progress(), run() and next() retire every iteration once and in order", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  for (const auto backend : {swp::Backend::host, swp::Backend::sim}) {
    for (const unsigned workers : {0u, 2u}) {
      CAPTURE(swp::backend_name(backend));
      CAPTURE(workers);
      swp::Runtime rt({.backend = backend, .workers = workers});
      auto pipe = Engine::template make<Ctx>(rt, chain(), 3);
      std::vector<std::int64_t> on_retire;
      pipe->on_retire([&](const Ctx& ctx) { on_retire.push_back(ctx.iter_idx); });

      std::vector<std::int64_t> by_progress;
      pipe->fill_pipeline(batches(20));
      while (const auto retired = pipe->progress()) by_progress.push_back(retired->iter());
      CHECK(by_progress == upto(20));

      // Iteration numbers go on across runs.
      CHECK(pipe->run(batches(20)).iterations == 20);

      std::vector<std::int64_t> by_next;
      pipe->fill_pipeline(batches(20));
      swp::sync_wait(retire_by_next(*pipe, by_next));
      CHECK(by_next.size() == 20);
      CHECK(by_next.front() == 40);
      CHECK(by_next.back() == 59);

      CHECK(on_retire == upto(60));
    }
  }
}

TEST_CASE_TEMPLATE("an abandoned next() retires nothing, and the next call goes on with the run",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // No workers: next() is progress() on the awaiting thread; two: next() parks.
  for (const unsigned workers : {0u, 2u}) {
    CAPTURE(workers);
    swp::Runtime rt({.workers = workers});
    auto pipe = Engine::template make<Ctx>(rt, chain(), 3);
    std::vector<std::int64_t> on_retire;
    pipe->on_retire([&](const Ctx& ctx) { on_retire.push_back(ctx.iter_idx); });
    pipe->fill_pipeline(batches(6));
    swp::StopSignal abandon;
    abandon.request_stop("the caller gave up");
    CHECK_THROWS_WITH_AS(swp::sync_wait(pipe->next(abandon)), "the caller gave up",
                         swp::Cancelled);
    CHECK(on_retire.empty());
    std::vector<std::int64_t> retired;
    while (const auto r = pipe->progress()) retired.push_back(r->iter());
    CHECK(retired == upto(6));
    CHECK(on_retire == upto(6));
  }
}

TEST_CASE_TEMPLATE("on virtual time, an iteration that can never retire is a deadlock, named",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Promise<> never;  // what Load waits for in iteration 1; nobody completes it
  swp::Plan<Ctx> plan;
  plan.add("Load",
           [&never](Ctx& ctx) -> swp::Co<void> {
             if (ctx.iter_idx == 1) co_await never.get_future();
           },
           {.stage = 0, .thread_group = "load"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  pipe->fill_pipeline(batches(4));
  CHECK(swp::test::iter_of(pipe->progress()) == 0);
  std::string what;
  try {
    pipe->progress();
    FAIL("no deadlock reported");
  } catch (const swp::PipelineTimeout& e) {
    what = e.what();
  }
  CHECK(swp::test::contains(what, "iteration 1 can never retire (nothing left to run: deadlock); "
                                  "unfinished:"));
  CHECK(swp::test::contains(what, "Load (iter 1)"));
  // The stuck await was cancelled: the pipeline drained and runs again.
  const std::int64_t first = pipe->next_iteration();  // numbers go on past the failed run's
  CHECK(first >= 2);
  pipe->fill_pipeline(batches(2));
  CHECK(swp::test::iter_of(pipe->progress()) == first);
  CHECK(swp::test::iter_of(pipe->progress()) == first + 1);
  CHECK_FALSE(pipe->progress());
}

TEST_CASE_TEMPLATE("a failed run hands every iteration in flight to on_failure, also when it throws",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, chain(3), 3);
  std::vector<std::int64_t> retired;
  std::map<std::int64_t, std::string> failed;  // iteration -> what on_failure was told
  pipe->on_retire([&](const Ctx& ctx) { retired.push_back(ctx.iter_idx); });
  pipe->on_failure([&](const Ctx& ctx, const std::exception_ptr& why) {
    try {
      std::rethrow_exception(why);
    } catch (const std::exception& e) {
      failed[ctx.iter_idx] = e.what();
    }
    throw std::runtime_error("reporter broke");
  });
  pipe->fill_pipeline(batches(10));
  try {
    while (pipe->progress()) {
    }
    FAIL("the failure did not surface");
  } catch (const swp::CallbackError& e) {
    // The first report that threw is the error, with the run's failure it was reporting.
    CHECK(e.callback() == swp::CallbackError::Callback::on_failure);
    CHECK(swp::test::contains(e.what(), "reporter broke"));
    CHECK(swp::test::contains(e.what(), "while reporting the run's failure: task 'Work' failed "
                                        "in iteration 3: bad batch"));
  }
  // Each admitted iteration exactly once: retired before the failure, or handed back.
  const std::int64_t admitted = pipe->next_iteration();
  CHECK(admitted > 3);
  CHECK(retired == upto(static_cast<std::int64_t>(retired.size())));
  CHECK(static_cast<std::int64_t>(retired.size() + failed.size()) == admitted);
  for (const auto& entry : failed) {
    const std::int64_t iter = entry.first;
    const std::string& what = entry.second;
    CAPTURE(iter);
    CHECK(iter >= static_cast<std::int64_t>(retired.size()));
    if (iter == 3) {
      CHECK(swp::test::contains(what, "bad batch"));
    } else {
      CHECK(what == "iteration " + std::to_string(iter) + " cancelled: the run failed: task "
                                                          "'Work' failed in iteration 3: bad batch");
    }
  }
  // The pipeline runs again.
  pipe->on_failure([](const Ctx&, const std::exception_ptr&) {});
  CHECK(pipe->run(batches(2)).iterations == 2);
}

namespace {

// What a call made where another drives the run threw (empty: it threw nothing).
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const swp::PipelineStateError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE_TEMPLATE("a call from on_retire while another drives the run is refused; nothing retires "
                   "twice or is passed over",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Each driving form outside, each call inside, on host (no workers, two) and sim. The
  // retirement whose callback runs is the outer call's: a second one would retire the same
  // iteration again and pass over the next (it did, before the refusal).
  const std::vector<std::string> inner_calls{"progress()", "drain()", "next()", "run()"};
  for (const auto backend : {swp::Backend::host, swp::Backend::sim}) {
    for (const unsigned workers : {0u, 2u}) {
      for (const std::string outer : {"progress()", "run()", "next()"}) {
        for (const std::string& inner : inner_calls) {
          CAPTURE(swp::backend_name(backend));
          CAPTURE(workers);
          CAPTURE(outer);
          CAPTURE(inner);
          swp::Runtime rt({.backend = backend, .workers = workers});
          auto pipe = Engine::template make<Ctx>(rt, chain(), 3);
          std::vector<int> retired;  // batches, in on_retire's order
          std::string refused;
          pipe->on_retire([&](const Ctx& ctx) {
            retired.push_back(ctx.batch);
            if (ctx.batch != 2) return;
            refused = refusal([&] {
              if (inner == "progress()") (void)pipe->progress();
              if (inner == "drain()") pipe->drain();
              if (inner == "next()") (void)swp::sync_wait(pipe->next());
              if (inner == "run()") (void)pipe->run(batches(1));
            });
          });
          if (outer == "run()") {
            CHECK(pipe->run(batches(8)).iterations == 8);
          } else {
            pipe->fill_pipeline(batches(8));
            std::vector<std::int64_t> by_next;
            if (outer == "next()") {
              swp::sync_wait(retire_by_next(*pipe, by_next));
            } else {
              while (pipe->progress()) {
              }
            }
          }
          CHECK(retired == batches(8));
          // run() fills first, which is refused the same way.
          const std::string expected =
              (inner == "run()" ? std::string("fill_pipeline") : inner) + " called while " +
              outer +
              " of the same pipeline runs (from its on_retire, on_failure, source or a task "
              "body, or from another thread)";
          CHECK(swp::test::contains(refused, expected));
          // Refused before it touched the run: the pipeline goes on as before.
          CHECK(pipe->run(batches(3)).iterations == 3);
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE("on_retire that lets the refusal through fails the run; every iteration is "
                   "accounted for once",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, chain(), 3);
  std::vector<std::int64_t> retired;
  std::vector<std::int64_t> failed;
  pipe->on_retire([&](const Ctx& ctx) {
    retired.push_back(ctx.iter_idx);
    if (ctx.iter_idx == 2) (void)pipe->progress();
  });
  pipe->on_failure([&](const Ctx& ctx, const std::exception_ptr&) {
    failed.push_back(ctx.iter_idx);
  });
  try {
    pipe->run(batches(10));
    FAIL("the refusal did not fail the run");
  } catch (const swp::CallbackError& e) {
    CHECK(e.callback() == swp::CallbackError::Callback::on_retire);
    CHECK(swp::test::contains(e.what(), "on_retire failed in iteration 2: progress() called "
                                        "while run() of the same pipeline runs"));
  }
  CHECK(retired == upto(3));
  // The iterations admitted after 2 are handed back, each once, in order.
  const std::int64_t admitted = pipe->next_iteration();
  std::vector<std::int64_t> rest;
  for (std::int64_t i = 3; i < admitted; ++i) rest.push_back(i);
  CHECK(failed == rest);
}

TEST_CASE("another thread or a task body calling progress() while a call drives the run is "
          "refused") {
  // Host with a worker. Another thread: next() parks while Work of batch 0 waits for the test's
  // go-ahead (admitted inside that next(), it cannot retire before), and the test's thread asks
  // meanwhile. A task body: run() drives the whole run, and the body of batch 1 asks.
  swp::Runtime rt({.workers = 1});
  swp::Plan<Ctx> plan;
  std::atomic<bool> hold{true};
  std::atomic<bool> held{false};
  bool ask_from_body = false;  // written before the run that reads it
  std::string from_body;
  swp::DataFlowPipeline<Ctx>* self = nullptr;
  plan.add("Work",
           [&](Ctx& ctx) {
             if (ctx.batch == 0 && hold.load()) {
               held.store(true);
               while (hold.load()) std::this_thread::yield();
             }
             if (ctx.batch == 1 && ask_from_body)
               from_body = refusal([&] { (void)self->progress(); });
           },
           {.stage = 0, .thread_group = "work"});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  self = &pipe;

  pipe.fill_pipeline(batches(3));
  std::vector<std::int64_t> by_next;
  std::thread driver([&] { swp::sync_wait(retire_by_next(pipe, by_next)); });
  while (!held.load()) std::this_thread::yield();
  const std::string from_thread = refusal([&] { (void)pipe.progress(); });
  hold.store(false);
  driver.join();
  CHECK(swp::test::contains(from_thread, "progress() called while next() of the same pipeline"));
  CHECK(by_next == upto(3));

  ask_from_body = true;
  CHECK(pipe.run(batches(3)).iterations == 3);
  CHECK(swp::test::contains(from_body, "progress() called while run() of the same pipeline"));
}

TEST_CASE_TEMPLATE("fill_pipeline from on_failure while a failed run hands its iterations back is "
                   "refused; each is reported once",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The hand-back marks the run unfilled before it reports: a fill there was accepted, ended
  // the report (iterations never reported) and lost a batch of the new run.
  for (const unsigned workers : {0u, 2u}) {
    CAPTURE(workers);
    swp::Runtime rt({.workers = workers});
    auto pipe = Engine::template make<Ctx>(rt, chain(1), 3);
    std::vector<std::int64_t> retired, failed;
    std::vector<std::string> refusals;
    pipe->on_retire([&](const Ctx& ctx) { retired.push_back(ctx.iter_idx); });
    pipe->on_failure([&](const Ctx& ctx, const std::exception_ptr&) {
      if (ctx.iter_idx >= 0) failed.push_back(ctx.iter_idx);  // -1: a batch never admitted
      refusals.push_back(refusal([&] { pipe->fill_pipeline(batches(3)); }));
    });
    pipe->fill_pipeline(batches(10));
    CHECK_THROWS_AS(
        [&] {
          while (pipe->progress()) {
          }
        }(),
        swp::TaskError);
    const std::int64_t admitted = pipe->next_iteration();
    std::vector<std::int64_t> all = retired;
    all.insert(all.end(), failed.begin(), failed.end());
    CHECK(all == upto(admitted));
    REQUIRE(!refusals.empty());
    for (const auto& what : refusals)
      CHECK(swp::test::contains(what, "fill_pipeline called while progress() of the same "
                                      "pipeline runs"));
    // After the failure surfaced, the pipeline refills (batches Work does not fail on).
    retired.clear();
    CHECK(pipe->run(std::vector<int>{10, 11, 12}).iterations == 3);
    CHECK(retired == std::vector<std::int64_t>{admitted, admitted + 1, admitted + 2});
  }
}

}  // namespace test_run_driver
