#include "swp/trace/trace_recorder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/costed_plans.hpp"
#include "support/engines.hpp"
#include "support/names.hpp"

namespace test_trace_recorder {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("trace");

namespace {

using namespace std::chrono_literals;
using swp::TraceSlice;
using Key = std::pair<swp::TaskIndex, std::int64_t>;

struct Indexed {
  std::map<Key, const TraceSlice*> task, device;
  std::map<Key, std::vector<const TraceSlice*>> waits;
};

Indexed index(const swp::Trace& trace) {
  Indexed ix;
  for (const auto& s : trace.slices) {
    const Key key{s.task, s.iter};
    if (s.kind == TraceSlice::Kind::task) {
      CHECK_MESSAGE(ix.task.emplace(key, &s).second, "two task slices for ", trace.slice_name(s));
    } else if (s.kind == TraceSlice::Kind::device) {
      CHECK_MESSAGE(ix.device.emplace(key, &s).second, "two device slices for ", trace.slice_name(s));
    } else {
      ix.waits[key].push_back(&s);
    }
  }
  return ix;
}

swp::Clock::duration us(double v) {
  return std::chrono::duration_cast<swp::Clock::duration>(std::chrono::duration<double, std::micro>(v));
}

// No two slices of `kind` on one track overlap.
void check_serial_rows(const swp::Trace& trace, TraceSlice::Kind kind) {
  std::map<std::size_t, std::vector<const TraceSlice*>> rows;
  for (const auto& s : trace.slices)
    if (s.kind == kind) rows[s.track].push_back(&s);
  for (auto& entry : rows) {
    const std::size_t track = entry.first;  // not bindings: clang 14 cannot CAPTURE one
    auto& row = entry.second;
    std::ranges::sort(row, {}, &TraceSlice::start);
    for (std::size_t k = 1; k < row.size(); ++k) {
      CAPTURE(trace.tracks[track].name);
      CHECK_MESSAGE(row[k - 1]->end <= row[k]->start, trace.slice_name(*row[k - 1]),
                    " overlaps ", trace.slice_name(*row[k]));
    }
  }
}

// The end of the waits of an instance: when its body started.
swp::Clock::duration body_start(const Indexed& ix, const Key& key) {
  auto start = ix.task.at(key)->start;
  if (const auto it = ix.waits.find(key); it != ix.waits.end())
    for (const TraceSlice* w : it->second) start = std::max(start, w->end);
  return start;
}

// Everything a trace of a run of `graph` over `iters` iterations must show.
void check_honours_schedule(const swp::Trace& trace, const swp::PlanGraph& graph, int iters) {
  REQUIRE(trace.tasks.size() == graph.size());
  const Indexed ix = index(trace);
  for (const auto& s : trace.slices) {
    CHECK(s.start <= s.end);
    CHECK(s.start >= swp::Clock::duration::zero());
    REQUIRE(s.track < trace.tracks.size());
  }
  check_serial_rows(trace, TraceSlice::Kind::task);
  check_serial_rows(trace, TraceSlice::Kind::device);
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
    for (std::int64_t i = 0; i < iters; ++i) {
      const Key key{t, i};
      CAPTURE(trace.instance_name(t, i));
      // One task slice on the task's lane, one device slice of the right length on its stream.
      REQUIRE(ix.task.contains(key));
      const TraceSlice& task = *ix.task.at(key);
      CHECK(task.ok);
      CHECK(trace.tracks[task.track].kind == swp::TraceTrack::Kind::lane);
      CHECK(trace.tracks[task.track].name == graph.lane(t));
      REQUIRE(ix.device.contains(key));
      const TraceSlice& device = *ix.device.at(key);
      CHECK(trace.tracks[device.track].kind == swp::TraceTrack::Kind::stream);
      CHECK(trace.tracks[device.track].name == graph.stream(t));
      CHECK(device.end - device.start == us(graph.cost(t).device_us));
      // Waits lie inside the task slice, and the body runs after every producer submitted.
      if (ix.waits.contains(key))
        for (const TraceSlice* w : ix.waits.at(key)) {
          CHECK(w->track == task.track);
          CHECK(w->start >= task.start);
          CHECK(w->end <= task.end);
        }
      auto producers = [&](std::span<const swp::TaskIndex> deps, std::int64_t at) {
        if (at < 0) return;
        for (swp::TaskIndex d : deps) {
          CAPTURE(trace.instance_name(d, at));
          CHECK(body_start(ix, key) >= ix.task.at({d, at})->end);
          // Device order: the consumer's work starts after the producer's, on any stream.
          CHECK(device.start >= ix.device.at({d, at})->end);
        }
      };
      producers(graph.intra_deps(t), i);
      producers(graph.inter_deps(t), i - 1);
    }
  }
  CHECK(ix.task.size() == graph.size() * static_cast<std::size_t>(iters));
}

}  // namespace

TEST_CASE("a recorded SparseDist run honours its schedule on every engine and backend") {
  const auto plan = swp::test::costed_sparse_dist(/*io_lane=*/true);
  const auto graph = swp::validate(plan);
  const int iters = 8;
  for (auto engine : {swp::EngineKind::clock, swp::EngineKind::data_flow}) {
    for (auto backend : {swp::Backend::sim, swp::Backend::host}) {
      CAPTURE(swp::engine_name(engine));
      CAPTURE(swp::backend_name(backend));
      const swp::Trace trace = swp::test::record_synthetic(plan, engine, iters, backend);
      CHECK(trace.backend == swp::backend_name(backend));
      REQUIRE(trace.tracks.size() == 5);  // streams in plan order, then lanes
      CHECK(trace.tracks[0].name == "memcpy");
      CHECK(trace.tracks[1].name == "data_dist");
      CHECK(trace.tracks[2].name == "default");
      CHECK(trace.tracks[3].kind == swp::TraceTrack::Kind::lane);
      CHECK(trace.tracks[3].name == "io");  // H2D's lane, the plan's first task
      CHECK(trace.tracks[4].name == "default");
      check_honours_schedule(trace, graph, iters);
      CHECK(std::ranges::is_sorted(trace.slices, [](const TraceSlice& a, const TraceSlice& b) {
        return a.track != b.track ? a.track < b.track : a.start < b.start;
      }));
    }
  }
}

TEST_CASE("a task that waits for a dependency on another lane shows the wait, naming the producer") {
  // Clock engine: B is released with A in each period, takes lane l1 at once and waits there
  // for A, which spends 100 us of CPU time on lane l0.
  auto plan = swp::test::make_plan({{"A", 0, "s0", "l0"}, {"B", 0, "s1", "l1"}}, {{"B", "A"}});
  plan.tasks[0].cost = {.cpu_us = 100, .device_us = 10};
  plan.tasks[1].cost = {.cpu_us = 10, .device_us = 10};
  const auto trace = swp::test::record_synthetic(plan, swp::EngineKind::clock, 4);
  const Indexed ix = index(trace);
  for (std::int64_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE(ix.waits.contains({1, i}));
    const auto& waits = ix.waits.at({1, i});
    REQUIRE(waits.size() == 1);
    const TraceSlice& wait = *waits.front();
    CHECK(wait.waited_for.kind == swp::TaskWait::Kind::dependency);
    CHECK(wait.waited_for.task == 0);
    CHECK(wait.waited_for.iter == i);
    CHECK(trace.slice_name(wait) == "wait A/" + std::to_string(i));
    CHECK(wait.start == ix.task.at({1, i})->start);
    CHECK(wait.end == ix.task.at({0, i})->end);  // virtual time: exactly when A finished
    CHECK(wait.end - wait.start == 100us);
    CHECK(ix.task.at({1, i})->end - wait.end == 10us);  // then B's own CPU time
  }
  CHECK_FALSE(ix.waits.contains({0, 0}));  // A never waited
}

TEST_CASE("a globally ordered task that waits for its turn shows a turn wait") {
  // G1 on lane l1 is released in each period before G0's turn has passed: it waits for it.
  auto plan = swp::test::make_plan({{"G0", 0, "s0", "l0"}, {"G1", 0, "s1", "l1"}});
  plan.tasks[0].schedule.globally_ordered = true;
  plan.tasks[1].schedule.globally_ordered = true;
  plan.tasks[0].cost = {.cpu_us = 50, .device_us = 5};
  plan.tasks[1].cost = {.cpu_us = 5, .device_us = 5};
  const auto trace = swp::test::record_synthetic(plan, swp::EngineKind::clock, 3);
  int turn_waits = 0;
  for (const auto& s : trace.slices) {
    if (s.kind != TraceSlice::Kind::wait) continue;
    CHECK(s.waited_for.kind == swp::TaskWait::Kind::turn);
    CHECK(trace.slice_name(s) == "wait turn");
    CHECK(s.end - s.start == 50us);
    ++turn_waits;
  }
  CHECK(turn_waits == 3);
}

TEST_CASE("a failed instance is recorded as not ok, and the trace of the failed run is kept") {
  using Ctx = swp::IterContext<int>;
  swp::Plan<Ctx> plan;
  plan.add("Load", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(5us);
    scope.device_work(5us);
  }, {.stream = "s0"});
  plan.add("Boom", [](Ctx& ctx, swp::TaskScope&) -> swp::Co<void> {
    if (ctx.batch == 2) throw std::runtime_error("bad batch");
    co_return;
  }, {.stream = "s1"});
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseDataFlow::make<Ctx>(rt, plan, 2);
  swp::TraceRecorder recorder;
  swp::attach_run_observer(recorder, *pipe);
  CHECK_THROWS_AS(pipe->run(std::vector<int>{0, 1, 2, 3}), swp::TaskError);
  swp::detach_run_observer(recorder, *pipe);
  const auto trace = recorder.trace();
  const Indexed ix = index(trace);
  REQUIRE(ix.task.contains({1, 2}));
  CHECK_FALSE(ix.task.at({1, 2})->ok);
  CHECK(ix.task.at({1, 1})->ok);
  CHECK(ix.device.contains({0, 0}));
}

TEST_CASE("a detached recorder records nothing more, and a new run replaces the old one") {
  const auto plan = swp::test::costed_sparse_dist();
  using Ctx = swp::IterContext<int>;
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseClock::make<Ctx>(rt, plan);
  swp::TraceRecorder recorder;
  swp::attach_run_observer(recorder, *pipe);
  pipe->run(std::vector<int>{0, 1, 2});
  swp::detach_run_observer(recorder, *pipe);
  const auto events = recorder.event_count();
  // 8 tasks x 3 iterations: start, finish and device work each (one lane: nothing waits).
  CHECK(events == 8 * 3 * 3);
  pipe->run(std::vector<int>{0, 1, 2});
  CHECK(recorder.event_count() == events);
  CHECK(recorder.trace().slices.size() == 8 * 3 * 2);

  swp::attach_run_observer(recorder, *pipe);
  pipe->run(std::vector<int>{0});
  swp::detach_run_observer(recorder, *pipe);
  CHECK(recorder.event_count() == 8 * 3);
  // Times count from the start of the latest run.
  CHECK(recorder.trace().span() < 3ms);
}

TEST_CASE("a recorded serial run shows every task in serial order, its device work on default") {
  const auto plan = swp::test::costed_sparse_dist(/*io_lane=*/true);
  const auto graph = swp::validate(plan);
  using Ctx = swp::IterContext<int>;
  for (auto backend : {swp::Backend::sim, swp::Backend::host}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend});
    auto pipe = swp::test::UseDataFlow::make<Ctx>(rt, plan, 3);
    swp::TraceRecorder recorder;
    swp::attach_run_observer(recorder, *pipe);
    pipe->run_serial(std::vector<int>{0, 1, 2});
    swp::detach_run_observer(recorder, *pipe);
    const auto trace = recorder.trace();
    const Indexed ix = index(trace);
    REQUIRE(ix.task.size() == graph.size() * 3);
    CHECK(ix.waits.empty());  // nothing waits: every producer ran before
    const TraceSlice* previous = nullptr;
    for (std::int64_t i = 0; i < 3; ++i) {
      for (swp::TaskIndex t : pipe->serial_order()) {
        CAPTURE(trace.instance_name(t, i));
        REQUIRE(ix.task.contains({t, i}));
        const TraceSlice& task = *ix.task.at({t, i});
        CHECK(task.ok);
        CHECK(trace.tracks[task.track].name == graph.lane(t));
        if (previous != nullptr) CHECK(task.start >= previous->end);
        previous = &task;
        REQUIRE(ix.device.contains({t, i}));
        const TraceSlice& device = *ix.device.at({t, i});
        CHECK(trace.tracks[device.track].kind == swp::TraceTrack::Kind::stream);
        CHECK(trace.tracks[device.track].name == "default");
        CHECK(device.end - device.start == us(graph.cost(t).device_us));
      }
    }
  }
}

TEST_CASE("a serial run's default stream row stays with the streams when no task names it") {
  auto plan = swp::test::costed_sparse_dist(/*io_lane=*/true);
  for (auto& planned : plan.tasks)
    if (planned.schedule.stream == "default") planned.schedule.stream = "compute";
  using Ctx = swp::IterContext<int>;
  swp::Runtime rt({.backend = swp::Backend::sim});
  auto pipe = swp::test::UseDataFlow::make<Ctx>(rt, plan, 3);
  swp::TraceRecorder recorder;
  swp::attach_run_observer(recorder, *pipe);
  pipe->run_serial(std::vector<int>{0, 1});
  swp::detach_run_observer(recorder, *pipe);
  const auto trace = recorder.trace();
  std::string rows;
  for (const auto& track : trace.tracks)
    rows += (track.kind == swp::TraceTrack::Kind::stream ? "stream " : "lane ") + track.name + "; ";
  // Streams first, then lanes, each in the order the plan names them; `default` (named by
  // no task, where a serial run puts its device work) last of the streams.
  CHECK(rows ==
        "stream memcpy; stream data_dist; stream compute; stream default; lane io; lane default; ");
  bool device_on_default = false;
  for (const auto& slice : trace.slices) {
    if (slice.kind != TraceSlice::Kind::device) continue;
    CHECK(trace.tracks[slice.track].name == "default");
    device_on_default = true;
  }
  CHECK(device_on_default);
}

TEST_CASE("device work of task indices past 65535 is attributed to its own task and iteration") {
  // A wide plan: 70000 cost-free tasks and, last, two with device work. A tag that packed
  // `iter << 16 | task` read task 70000 of iteration i as task 4464 of iteration i + 1.
  constexpr std::size_t wide = 70'000;
  swp::PipelinePlan plan;
  for (std::size_t t = 0; t < wide; ++t)
    plan.add(swp::test::numbered("t", static_cast<long long>(t)));
  plan.add("Last", {.stream = "s"}, {.device_us = 10});
  plan.add("Late", {.stage = 1, .stream = "s"}, {.device_us = 20});
  swp::TraceRecorder recorder;
  swp::SyntheticRunOptions options;
  options.iters = 3;
  options.runtime.backend = swp::Backend::sim;
  options.observer = &recorder;
  swp::run_synthetic(plan, options);
  const auto trace = recorder.trace();
  std::map<Key, swp::Clock::duration> device;
  for (const auto& s : trace.slices)
    if (s.kind == TraceSlice::Kind::device) device[{s.task, s.iter}] += s.end - s.start;
  std::map<Key, swp::Clock::duration> expected;
  for (std::int64_t i = 0; i < 3; ++i) {
    expected[{wide, i}] = 10us;
    expected[{wide + 1, i}] = 20us;
  }
  CHECK(device == expected);
}

TEST_SUITE_END();

}  // namespace test_trace_recorder
