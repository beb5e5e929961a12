// FailurePolicy and on_failure: every admitted iteration is accounted for exactly once —
// retired (on_retire) or failed/cancelled with its error (on_failure) — under fail_run (the
// default), skip, and cancel(). Both engines.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/random_plans.hpp"
#include "support/seed.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_failure_policy {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Fields {
  int total = 0;
};
using Ctx = swp::IterContext<int, Fields>;

struct Counters {
  std::atomic<int> after_runs{0};
  std::atomic<int> ordered_runs{0};
  std::mutex mutex;
  std::map<std::int64_t, int> total;  // Sum's running totals, by iteration
};

// Sum adds the batch to the previous iteration's total (an inter-iteration dependency that
// must go on past a skipped iteration), on its own lane.
void add_sum(swp::Plan<Ctx>& plan, Counters& counters) {
  auto sum = plan.add("Sum",
                      [&counters](Ctx& ctx) {
                        std::lock_guard lock(counters.mutex);
                        const int before =
                            ctx.has_previous() ? counters.total.at(ctx.iter_idx - 1) : 0;
                        ctx.total = before + ctx.batch;
                        counters.total[ctx.iter_idx] = ctx.total;
                      },
                      {.stage = 0, .thread_group = "sum"});
  plan.inter_iter_deps = {{sum, sum}};
}

// Load -> Work (throws for the batches `fails` says) -> After, and Ordered (globally ordered,
// reads Work); and Sum (add_sum).
template <class Fails>
swp::Plan<Ctx> plan(Counters& counters, Fails fails) {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  auto work = plan.add(
      "Work",
      [load, fails](Ctx& ctx) -> swp::Co<int> {
        const int v = co_await ctx.get(load);
        if (fails(v)) throw std::runtime_error("bad batch " + std::to_string(v));
        co_return v * 10;
      },
      {.stage = 1, .thread_group = "work"}, swp::reads(load));
  plan.add(
      "After", [&counters](Ctx&) { ++counters.after_runs; }, {.stage = 1, .thread_group = "after"},
      swp::reads(work));
  plan.add(
      "Ordered", [&counters](Ctx&) { ++counters.ordered_runs; },
      {.stage = 2, .globally_ordered = true}, swp::reads(work));
  add_sum(plan, counters);
  return plan;
}

std::vector<int> one_to(int n) {
  std::vector<int> b;
  for (int i = 1; i <= n; ++i) b.push_back(i);
  return b;
}

std::string what(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
}

// Which iterations each callback had, and why the failed ones failed.
struct Ledger {
  std::vector<std::int64_t> retired;
  std::map<std::int64_t, std::exception_ptr> failed;

  void attach(swp::Pipeline<Ctx>& pipe) {
    pipe.on_retire([this](const Ctx& c) { retired.push_back(c.iter_idx); });
    pipe.on_failure([this](const Ctx& c, const std::exception_ptr& why) {
      CHECK(failed.count(c.iter_idx) == 0);  // once
      failed[c.iter_idx] = why;
    });
  }
  // Every iteration in [0, admitted) exactly once, in one callback or the other.
  void check_accounts_for(std::int64_t admitted) const {
    std::set<std::int64_t> all(retired.begin(), retired.end());
    CHECK(all.size() == retired.size());
    for (const auto& [iter, why] : failed) {
      CHECK(why != nullptr);
      CHECK(all.insert(iter).second);
    }
    std::set<std::int64_t> expected;
    for (std::int64_t i = 0; i < admitted; ++i) expected.insert(i);
    CHECK(all == expected);
  }
};

}  // namespace

TEST_CASE_TEMPLATE("skip: a failed iteration is reported in its turn and the run goes on", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Counters counters;
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, plan(counters, [](int v) { return v % 3 == 0; }), 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  pipe->set_failure_policy(swp::FailurePolicy::skip);
  CHECK(pipe->failure_policy() == swp::FailurePolicy::skip);
  Ledger ledger;
  ledger.attach(*pipe);
  pipe->fill_pipeline(one_to(10));
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> failed;
  while (auto r = pipe->progress()) {
    order.push_back(r->iter());
    if (!r->failed()) continue;
    failed.push_back(r->iter());
    CHECK_THROWS_AS((void)r->get(swp::Output<int>{{1, "Work"}}), swp::TaskError);
  }
  CHECK(order == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(failed == std::vector<std::int64_t>{2, 5, 8});  // batches 3, 6, 9
  ledger.check_accounts_for(10);
  CHECK(ledger.retired == std::vector<std::int64_t>{0, 1, 3, 4, 6, 7, 9});
  for (std::int64_t iter : failed) {
    REQUIRE(ledger.failed.count(iter) == 1);
    try {
      std::rethrow_exception(ledger.failed[iter]);
    } catch (const swp::TaskError& e) {
      CHECK(e.task() == "Work");
      CHECK(e.iter() == iter);
      CHECK(what(e.nested()) == "bad batch " + std::to_string(iter + 1));
    }
  }
  // The failed iterations' dependents did not run, the ordered one took its turn without
  // running (later ordered instances ran: no hang), and Sum went on through every iteration.
  CHECK(counters.after_runs == 7);
  CHECK(counters.ordered_runs == 7);
  CHECK(counters.total.at(9) == 55);
}

TEST_CASE_TEMPLATE("fail_run: the failed iteration and every other one in flight are reported",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  Counters counters;
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, plan(counters, [](int v) { return v == 5; }), 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  CHECK(pipe->failure_policy() == swp::FailurePolicy::fail_run);
  Ledger ledger;
  ledger.attach(*pipe);
  pipe->fill_pipeline(one_to(10));
  CHECK_THROWS_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      swp::TaskError);
  const std::int64_t admitted = pipe->next_iteration();
  CHECK(admitted > 4);
  ledger.check_accounts_for(admitted);
  REQUIRE(ledger.failed.count(4) == 1);
  CHECK_THROWS_AS(std::rethrow_exception(ledger.failed[4]), swp::TaskError);
  for (const auto& [iter, why] : ledger.failed) {
    if (iter == 4) continue;
    CHECK_THROWS_AS(std::rethrow_exception(why), swp::Cancelled);
    CHECK(what(why) == "iteration " + std::to_string(iter) +
                           " cancelled: the run failed: task 'Work' failed in iteration 4: bad "
                           "batch 5");
  }
  // Refillable, and numbering goes on.
  ledger = {};
  ledger.attach(*pipe);
  pipe->fill_pipeline(std::vector<int>{1, 2});
  CHECK(swp::test::iter_of(pipe->progress()) == admitted);
  CHECK(swp::test::iter_of(pipe->progress()) == admitted + 1);
  CHECK_FALSE(pipe->progress());
}

namespace {

// Every task alone on its lane, none globally ordered, plain (not coroutine) bodies: with one
// thread the engines run these without join counters (data-flow's whole iterations, the
// clock's uncounted periods), and a body that throws hands its instance over to the general
// path from inside that run. Load -> Work (throws for `fails`) -> After; Sum carries a total
// from one iteration to the next.
template <class Fails>
swp::Plan<Ctx> plain_alone_plan(Counters& counters, Fails fails) {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0, .thread_group = "load"});
  auto work = plan.add(
      "Work",
      [fails](Ctx& ctx) {
        if (fails(ctx.batch)) throw std::runtime_error("bad batch " + std::to_string(ctx.batch));
        return ctx.batch * 10;
      },
      {.stage = 1, .thread_group = "work"}, swp::reads(load));
  plan.add(
      "After", [&counters](Ctx&) { ++counters.after_runs; }, {.stage = 2, .thread_group = "after"},
      swp::reads(work));
  add_sum(plan, counters);
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE("with the caller the only thread, a plain body that throws is accounted for "
                   "under both policies",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("skip") {
    for (const unsigned depth : {1u, 3u}) {
      CAPTURE(depth);
      Counters counters;
      swp::Runtime rt({.workers = 0});
      auto pipe = Engine::template make<Ctx>(
          rt, plain_alone_plan(counters, [](int v) { return v % 3 == 0; }), depth);
      pipe->set_failure_policy(swp::FailurePolicy::skip);
      Ledger ledger;
      ledger.attach(*pipe);
      pipe->fill_pipeline(one_to(10));
      std::vector<std::int64_t> failed;
      while (auto r = pipe->progress())
        if (r->failed()) failed.push_back(r->iter());
      CHECK(failed == std::vector<std::int64_t>{2, 5, 8});  // batches 3, 6, 9
      ledger.check_accounts_for(10);
      for (const auto& [iter, why] : ledger.failed) {
        CHECK_THROWS_AS(std::rethrow_exception(why), swp::TaskError);
        CHECK(what(why).find("task 'Work' failed in iteration " + std::to_string(iter)) !=
              std::string::npos);
      }
      CHECK(counters.after_runs == 7);
      CHECK(counters.total.at(9) == 55);  // Sum went on through every iteration
    }
  }
  SUBCASE("fail_run, then a refill") {
    for (const unsigned depth : {1u, 3u}) {
      CAPTURE(depth);
      Counters counters;
      swp::Runtime rt({.workers = 0});
      auto pipe = Engine::template make<Ctx>(
          rt, plain_alone_plan(counters, [](int v) { return v == 5; }), depth);
      Ledger ledger;
      ledger.attach(*pipe);
      pipe->fill_pipeline(one_to(10));
      std::vector<std::int64_t> retired;
      try {
        while (auto r = pipe->progress()) retired.push_back(r->iter());
        FAIL("the error did not surface");
      } catch (const swp::TaskError& e) {
        CHECK(e.task() == "Work");
        CHECK(e.iter() == 4);
      }
      // Iterations retire in order, none past the failed one.
      CHECK(retired.size() <= 4);
      for (std::size_t i = 0; i < retired.size(); ++i)
        CHECK(retired[i] == static_cast<std::int64_t>(i));
      const std::int64_t admitted = pipe->next_iteration();
      ledger.check_accounts_for(admitted);
      REQUIRE(ledger.failed.count(4) == 1);
      CHECK_THROWS_AS(std::rethrow_exception(ledger.failed[4]), swp::TaskError);
      // A clean run after it, numbered on, with every task run.
      const int after_before = counters.after_runs.load();
      pipe->fill_pipeline(std::vector<int>{1, 2, 3, 4, 6, 7});
      for (std::int64_t i = 0; i < 6; ++i)
        CHECK(swp::test::iter_of(pipe->progress()) == admitted + i);
      CHECK_FALSE(pipe->progress());
      CHECK(counters.after_runs == after_before + 6);
      CHECK(counters.total.at(admitted + 5) == 23);
    }
  }
}

TEST_CASE_TEMPLATE("cancel(): every iteration in flight is reported cancelled", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Counters counters;
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, plan(counters, [](int) { return false; }), 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  Ledger ledger;
  pipe->on_failure(
      [&](const Ctx& c, const std::exception_ptr& why) { ledger.failed[c.iter_idx] = why; });
  pipe->on_retire([&](const Ctx& c) {
    ledger.retired.push_back(c.iter_idx);
    if (c.iter_idx == 2) pipe->cancel("shutting down");
  });
  pipe->fill_pipeline(one_to(20));
  CHECK_THROWS_WITH_AS(
      [&] {
        while (pipe->progress()) {
        }
      }(),
      "pipeline cancelled: shutting down", swp::Cancelled);
  ledger.check_accounts_for(pipe->next_iteration());
  CHECK(ledger.retired == std::vector<std::int64_t>{0, 1, 2});
  for (const auto& [iter, why] : ledger.failed)
    CHECK(what(why) == "pipeline cancelled: shutting down");
}

TEST_CASE("skip: an on_failure that throws fails the run as a CallbackError") {
  Counters counters;
  swp::Runtime rt({.workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan(counters, [](int v) { return v == 2; }), 2);
  pipe.set_failure_policy(swp::FailurePolicy::skip);
  int calls = 0;
  pipe.on_failure([&](const Ctx&, const std::exception_ptr&) {
    ++calls;
    throw std::runtime_error("reporter broke");
  });
  pipe.fill_pipeline(one_to(5));
  CHECK(swp::test::iter_of(pipe.progress()) == 0);
  try {
    while (pipe.progress()) {
    }
    FAIL("no error");
  } catch (const swp::CallbackError& e) {
    // Iteration 1's report failed the run; reporting the others in flight failed too, and the
    // error says both.
    CHECK(e.callback() == swp::CallbackError::Callback::on_failure);
    CHECK(std::string(e.what()).find("on_failure failed in iteration 1: reporter broke") !=
          std::string::npos);
  }
  // Each iteration once: the one whose on_failure threw is not reported again; the others in
  // flight went to on_failure too (each throwing: the first of those is not the error).
  CHECK(calls == pipe.next_iteration() - 1);
  pipe.fill_pipeline(one_to(1));
  CHECK(pipe.progress());
  pipe.drain();
}

TEST_CASE("the failure policy and retire_after_device are set between runs") {
  Counters counters;
  swp::Runtime rt({.workers = 1});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan(counters, [](int) { return false; }), 2);
  pipe.fill_pipeline(one_to(3));
  CHECK_THROWS_AS(pipe.set_failure_policy(swp::FailurePolicy::skip), swp::PipelineStateError);
  CHECK_THROWS_AS(pipe.retire_after_device(), swp::PipelineStateError);
  pipe.drain();
  pipe.set_failure_policy(swp::FailurePolicy::skip);
  pipe.retire_after_device();
}

TEST_CASE_TEMPLATE("skip on random plans: failures stay in their iteration, each reported once",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  std::mt19937 rng(swp::test::seed(Engine::name[0] == 'c' ? 2111 : 2113));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  using Key = std::pair<swp::TaskIndex, std::int64_t>;
  for (int n = 0; n < 40; ++n) {
    const auto source = swp::test::random_plan(rng, {.max_device_us = 3, .max_cpu_us = 2});
    const auto graph = swp::validate(source);
    const int iterations = uniform(3, 10);
    std::set<Key> failing;  // (task, place in the run)
    for (int k = uniform(1, 4); k > 0; --k)
      failing.insert({static_cast<swp::TaskIndex>(uniform(0, static_cast<int>(graph.size()) - 1)),
                      uniform(0, iterations - 1)});
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));
    std::mutex mutex;
    std::set<Key> ran;
    swp::Plan<swp::IterContext<int>> plan;
    for (swp::TaskIndex t = 0; t < graph.size(); ++t)
      plan.add(
          graph.name(t),
          [t, &failing, &mutex, &ran](swp::IterContext<int>& ctx, swp::TaskScope& scope) {
            const std::int64_t i = ctx.iter_idx - ctx.first_iter;
            scope.device_work(std::chrono::microseconds(2));  // events and stream waits too
            if (failing.contains({t, i})) throw std::runtime_error("injected");
            std::lock_guard lock(mutex);
            ran.insert({t, i});
          },
          graph.schedule(t));
    plan.intra_iter_deps = source.intra_iter_deps;
    plan.inter_iter_deps = source.inter_iter_deps;
    plan.stream_aliases = source.stream_aliases;
    swp::Runtime rt({.workers = 2});
    auto pipe = Engine::template make<swp::IterContext<int>>(rt, plan, uniform(1, 4));
    pipe->set_timeouts({.retire = 30s, .drain = 30s});
    pipe->set_failure_policy(swp::FailurePolicy::skip);
    int reported = 0;
    pipe->on_failure([&](const swp::IterContext<int>&, const std::exception_ptr&) { ++reported; });
    std::vector<int> batches(static_cast<std::size_t>(iterations), 0);
    pipe->fill_pipeline(batches);
    std::int64_t expected = 0;
    int failed = 0;
    while (auto r = pipe->progress()) {
      CHECK(r->iter() == expected);
      bool fails = false;
      for (swp::TaskIndex t = 0; t < graph.size(); ++t)
        fails = fails || failing.contains({t, expected});
      CHECK(r->failed() == fails);
      if (r->failed()) {
        ++failed;
        try {
          std::rethrow_exception(r->error());
        } catch (const swp::TaskError& e) {
          CHECK(e.iter() == expected);
          REQUIRE(graph.find(e.task()));
          CHECK(failing.contains({*graph.find(e.task()), expected}));
        }
      }
      ++expected;
    }
    CHECK(expected == iterations);
    CHECK(reported == failed);
    // A task ran exactly when neither it nor any task it depends on within its iteration (by
    // intra dependencies, transitively) was set to fail.
    for (std::int64_t i = 0; i < iterations; ++i) {
      std::vector<char> blocked(graph.size(), 0);
      for (swp::TaskIndex t : graph.topological_order()) {
        blocked[t] = failing.contains({t, i});
        for (swp::TaskIndex d : graph.intra_deps(t)) blocked[t] = blocked[t] || blocked[d];
        CHECK_MESSAGE(ran.contains({t, i}) == !blocked[t], "task ", graph.name(t), " iteration ",
                      i);
      }
    }
  }
}

}  // namespace test_failure_policy
