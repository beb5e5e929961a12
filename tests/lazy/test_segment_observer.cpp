#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "swp/async/co.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/task_scope.hpp"
#include "swp/lazy/lazy_scheduler.hpp"
#include "swp/lazy/segment_observer.hpp"
#include "swp/trace/trace_recorder.hpp"

namespace test_segment_observer {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<int>;
using Order = std::vector<std::string>;

// Counts the segments it sees, per tag (the observer contract, without a pipeline).
struct Seen final : swp::SegmentObserver {
  std::vector<std::string> log;
  void segment_started(std::string_view s, swp::SegmentTag tag) noexcept override {
    log.push_back("start " + std::string(s) + "/" + std::to_string(tag.iter));
  }
  void segment_finished(std::string_view s, swp::SegmentTag tag, bool ok) noexcept override {
    log.push_back((ok ? "end " : "fail ") + std::string(s) + "/" + std::to_string(tag.iter));
  }
};

// A training step as segments: the task body below calls them in program order
// load, comm, compute, bwd; nothing in it says when comm runs.
struct Step {
  swp::LazyScheduler sched;
  std::map<std::int64_t, Order> ran;  // per iteration; written on the task's lane only
  std::mutex mutex;                   // ran is read by the test thread after the run
  explicit Step(swp::LazyOptions options = {}) : sched(std::move(options)) {}
  void log(std::int64_t iter, const char* name) {
    std::lock_guard lock(mutex);
    ran[iter].push_back(name);
  }
};

}  // namespace

TEST_CASE("an observer sees each segment run, with the round's tag, and no shadow run") {
  swp::LazyScheduler sched({.debug = true});
  Seen seen;
  sched.set_observer(&seen);
  auto a = sched.register_segment("a", [](int x) { return x; });
  auto b = sched.register_segment("b", [] {});
  sched.register_segment_pre_hook("b", "a");
  auto round = sched.round({.task = 1, .iter = 7});
  auto d = a(1);
  b();
  round.finish();
  CHECK(seen.log == Order{"start a/7", "end a/7", "start b/7", "end b/7"});
}

TEST_CASE_TEMPLATE(
    "segments inside a pipeline task are reordered by hooks without editing the "
    "body, co_awaited, and traced as slices",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  constexpr int iterations = 6;
  for (const bool reorder : {false, true}) {
    CAPTURE(reorder);
    Step step;
    auto& s = step;
    auto load = s.sched.register_segment("load", [&s](std::int64_t iter, int batch) {
      s.log(iter, "load");
      return batch * 10;
    });
    auto comm = s.sched.register_segment("comm", [&s](std::int64_t iter, int x) {
      s.log(iter, "comm");
      return x + 1;
    });
    auto compute = s.sched.register_segment("compute", [&s](std::int64_t iter, int x) {
      s.log(iter, "compute");
      return x * 2;
    });
    auto bwd = s.sched.register_segment("bwd", [&s](std::int64_t iter, int x, int c) {
      s.log(iter, "bwd");
      return x + c;
    });
    if (reorder) s.sched.register_segment_pre_hook("bwd", "comm");  // the only change

    swp::Runtime rt({.backend = swp::Backend::host, .workers = 2});
    swp::Plan<Ctx> plan;
    auto train =
        plan.add("Train",
                 [=, &s](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<int> {
                   auto round = s.sched.round({.task = scope.task(), .iter = scope.iter()});
                   auto x = load(ctx.iter_idx, ctx.batch);
                   auto c = comm(ctx.iter_idx, x);
                   auto y = compute(ctx.iter_idx, x);
                   auto g = bwd(ctx.iter_idx, y, c);
                   const int result = co_await g;  // swp's future, awaited in a pipeline task
                   round.finish();
                   co_return result;
                 },
                 {.stage = 0});
    std::vector<int> results(iterations, -1);
    plan.add(
        "Consume",
        [train, &results](Ctx& ctx) -> swp::Co<void> {
          results[static_cast<std::size_t>(ctx.iter_idx)] = co_await ctx.get(train);
        },
        {.stage = 1}, swp::reads(train));
    auto pipe = Engine::template make<Ctx>(rt, plan, 2);
    swp::TraceRecorder rec;
    swp::attach_run_observer(rec, *pipe);
    s.sched.set_observer(&rec);
    std::vector<int> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(i);
    CHECK(pipe->run(batches).iterations == iterations);
    swp::detach_run_observer(rec, *pipe);
    s.sched.set_observer(nullptr);

    const Order expected =
        reorder ? Order{"load", "compute", "comm", "bwd"} : Order{"load", "comm", "compute", "bwd"};
    const swp::Trace trace = rec.trace();
    for (int i = 0; i < iterations; ++i) {
      CAPTURE(i);
      CHECK(s.ran[i] == expected);
      CHECK(results[static_cast<std::size_t>(i)] == 10 * i * 2 + 10 * i + 1);  // same values
      // The segment slices of Train/i, in time order, inside Train/i's slice on its lane.
      const auto task = std::find_if(trace.slices.begin(), trace.slices.end(), [&](const auto& x) {
        return x.kind == swp::TraceSlice::Kind::task && x.iter == i &&
               trace.task_name(x.task) == "Train";
      });
      REQUIRE(task != trace.slices.end());
      Order traced;
      for (const auto& x : trace.slices) {
        if (x.kind != swp::TraceSlice::Kind::segment || x.iter != i) continue;
        CHECK(x.track == task->track);
        CHECK(x.start >= task->start);
        CHECK(x.end <= task->end);
        CHECK(x.ok);
        traced.push_back(x.segment);
      }
      CHECK(traced == expected);
    }
    const auto seg = std::find_if(trace.slices.begin(), trace.slices.end(), [](const auto& x) {
      return x.kind == swp::TraceSlice::Kind::segment;
    });
    REQUIRE(seg != trace.slices.end());
    CHECK(trace.slice_name(*seg) == "load (Train/0)");
    CHECK(std::string(swp::kind_name(seg->kind)) == "segment");
  }
}

}  // namespace test_segment_observer
