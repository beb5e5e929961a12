#include "swp/engine/pipeline.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/random_plans.hpp"
#include "support/run_trace.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/core/plan_json.hpp"

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;
using swp::TaskIndex;

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2);
  return a * 0xff51afd7ed558ccdULL;
}

// Per-(task, iteration) results, shared by all instances of a run.
struct Results {
  std::mutex mutex;
  std::map<std::pair<TaskIndex, std::int64_t>, std::uint64_t> value;
  std::map<std::pair<TaskIndex, std::int64_t>, int> runs;
  void put(TaskIndex t, std::int64_t i, std::uint64_t v) {
    std::lock_guard lock(mutex);
    value[{t, i}] = v;
    ++runs[{t, i}];
  }
  std::uint64_t get(TaskIndex t, std::int64_t i) {
    std::lock_guard lock(mutex);
    auto it = value.find({t, i});
    REQUIRE_MESSAGE(it != value.end(), "read of (", t, ", ", i, ") before it was produced");
    return it->second;
  }
};

// Binds every task of a synthetic plan to a body computing a value from its batch, its intra
// dependencies' outputs (through ctx.get) and its inter dependencies' previous values, and
// spending the plan's synthetic costs. `fail_at` makes one (task, iteration) throw.
swp::Plan<Ctx> bind(const swp::PipelinePlan& source, Results& results,
                    std::pair<TaskIndex, std::int64_t> fail_at = {~TaskIndex{0}, -1}) {
  const auto graph = swp::validate(source);
  swp::Plan<Ctx> plan;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    std::vector<swp::Output<std::uint64_t>> intra;
    for (TaskIndex d : graph.intra_deps(t)) intra.push_back({swp::TaskHandle{d, graph.name(d)}});
    std::vector<TaskIndex> inter(graph.inter_deps(t).begin(), graph.inter_deps(t).end());
    const auto cost = graph.cost(t);
    plan.add(graph.name(t),
             [t, intra, inter, cost, &results, fail_at](Ctx& ctx, swp::TaskScope& scope)
                 -> swp::Co<std::uint64_t> {
               std::uint64_t v = mix(t, ctx.batch);
               for (const auto& h : intra) v = mix(v, co_await ctx.get(h));
               if (ctx.iter_idx > 0)
                 for (TaskIndex d : inter) v = mix(v, results.get(d, ctx.iter_idx - 1));
               if (cost.cpu_us > 0)
                 co_await scope.cpu_work(std::chrono::microseconds(static_cast<int>(cost.cpu_us)));
               if (cost.device_us > 0)
                 scope.device_work(std::chrono::microseconds(static_cast<int>(cost.device_us)));
               if (std::pair{t, ctx.iter_idx} == fail_at) throw std::runtime_error("injected");
               results.put(t, ctx.iter_idx, v);
               co_return v;
             },
             graph.schedule(t), cost);
  }
  plan.intra_iter_deps = source.intra_iter_deps;
  plan.inter_iter_deps = source.inter_iter_deps;
  return plan;
}

// Every dependency, transitively, ordered on the CPU (finish before start) and on the device
// (end before start, for tasks that did device work).
void check_dependencies(const swp::PlanGraph& g, const swp::test::RunTrace& trace,
                        std::int64_t iterations) {
  const auto cpu = trace.cpu();
  const auto device = trace.device();
  using Key = swp::test::RunTrace::Key;
  auto preds = [&](Key k) {
    std::vector<Key> out;
    for (TaskIndex d : g.intra_deps(k.first)) out.push_back({d, k.second});
    if (k.second > 0)
      for (TaskIndex d : g.inter_deps(k.first)) out.push_back({d, k.second - 1});
    return out;
  };
  for (std::int64_t i = 0; i < iterations; ++i) {
    for (TaskIndex t = 0; t < g.size(); ++t) {
      const Key me{t, i};
      REQUIRE(cpu.contains(me));
      for (Key p : preds(me)) {
        REQUIRE(cpu.contains(p));
        CHECK_MESSAGE(cpu.at(p).finished < cpu.at(me).started, g.name(t), " iter ", i,
                      " started before its dependency ", g.name(p.first), " iter ", p.second,
                      " finished");
      }
      if (!device.contains(me)) continue;
      // Transitive predecessors that did device work must end before this work starts.
      std::set<Key> seen;
      std::vector<Key> stack = preds(me);
      while (!stack.empty()) {
        Key p = stack.back();
        stack.pop_back();
        if (!seen.insert(p).second) continue;
        if (device.contains(p))
          CHECK_MESSAGE(device.at(p).end <= device.at(me).start, g.name(t), " iter ", i,
                        " device work started before ", g.name(p.first), " iter ", p.second,
                        " ended");
        for (Key q : preds(p)) stack.push_back(q);
      }
    }
  }
  // Lanes are FIFO: instances start in the order they were released, one at a time.
  const auto released = trace.released();
  const auto started = trace.started();
  for (const auto& [lane, order] : released) CHECK(started.at(lane) == order);
  for (const auto& [key, c] : cpu) {
    for (const auto& [other, d] : cpu) {
      if (key == other || c.lane != d.lane) continue;
      CHECK_FALSE((c.started < d.started && d.started < c.finished));
    }
  }
}

template <class Engine>
void run_random_plans(swp::Backend backend, int plans, std::uint32_t seed) {
  std::mt19937 rng(seed);
  for (int n = 0; n < plans; ++n) {
    const auto source = swp::test::random_plan(rng);
    const auto graph = swp::validate(source);
    const std::int64_t iterations = std::uniform_int_distribution<int>(1, 12)(rng);
    const int max_depth = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<std::uint64_t> batches;
    for (std::int64_t i = 0; i < iterations; ++i) batches.push_back(rng());
    CAPTURE(n);
    CAPTURE(swp::plan_to_json(source));

    Results serial_results;
    {
      swp::Runtime rt({.backend = backend, .workers = 2});
      auto plan = bind(source, serial_results);
      auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
      pipe->run_serial(batches);
    }
    Results results;
    swp::test::RunTrace trace;
    swp::Runtime rt({.backend = backend, .workers = 2});
    auto plan = bind(source, results);
    auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
    pipe->set_observer(&trace);
    pipe->set_timeouts({.retire = 20s});
    for (TaskIndex t = 0; t < graph.size(); ++t) trace.attach(rt.stream(graph.stream(t)));
    std::vector<std::int64_t> retired;
    pipe->fill_pipeline(batches);
    while (auto i = pipe->progress()) retired.push_back(*i);
    std::vector<std::int64_t> expected(static_cast<std::size_t>(iterations));
    for (std::int64_t i = 0; i < iterations; ++i) expected[static_cast<std::size_t>(i)] = i;
    CHECK(retired == expected);
    pipe->drain();
    for (TaskIndex t = 0; t < graph.size(); ++t) rt.stream(graph.stream(t)).synchronize();
    check_dependencies(graph, trace, iterations);
    CHECK(results.value == serial_results.value);
    for (const auto& [key, runs] : results.runs) CHECK(runs == 1);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("random valid plans honour every dependency and match a serial run", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  SUBCASE("host backend, real threads") { run_random_plans<Engine>(swp::Backend::host, 120, 7); }
  SUBCASE("sim backend") { run_random_plans<Engine>(swp::Backend::sim, 120, 11); }
}

namespace {

// A two-stage typed pipeline: Load produces a value, Square consumes it through ctx.get.
struct Fields {
  int squared = 0;
};
using TypedCtx = swp::IterContext<int, Fields>;

swp::Plan<TypedCtx> typed_plan() {
  swp::Plan<TypedCtx> plan;
  auto load = plan.add("Load", [](TypedCtx& ctx) -> swp::Co<int> { co_return ctx.batch + 1; },
                       {.stage = 0, .thread_group = "io"});
  auto square = plan.add("Square", [load](TypedCtx& ctx) -> swp::Co<void> {
    const int& x = co_await ctx.get(load);
    ctx.squared = x * x;
  }, {.stage = 1, .thread_group = "compute"});
  plan.intra_iter_deps = {{square, load}};
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE("both engines share the pipeline API", Engine, swp::test::UseClock,
                   swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    auto pipe = Engine::template make<TypedCtx>(rt, typed_plan(), 2);
    std::vector<int> squares;
    pipe->on_retire([&](const TypedCtx& ctx) { squares.push_back(ctx.squared); });

    SUBCASE("fill_pipeline + progress retire every iteration in order, then end of data") {
      pipe->fill_pipeline(std::vector<int>{1, 2, 3});
      CHECK(pipe->progress() == 0);
      CHECK(pipe->progress() == 1);
      CHECK(pipe->progress() == 2);
      CHECK_FALSE(pipe->progress());
      CHECK(squares == std::vector<int>{4, 9, 16});
    }
    SUBCASE("a callable source ends with an empty optional") {
      int next = 0;
      auto stats = pipe->run([&]() -> std::optional<int> {
        if (next == 4) return std::nullopt;
        return next++;
      });
      CHECK(stats.iterations == 4);
      CHECK(squares == std::vector<int>{1, 4, 9, 16});
    }
    SUBCASE("the range form yields the retired iterations") {
      const std::vector<int> batches{5, 6};
      std::vector<std::int64_t> seen;
      for (std::int64_t i : pipe->iterations(batches)) seen.push_back(i);
      CHECK(seen == std::vector<std::int64_t>{0, 1});
      CHECK(squares == std::vector<int>{36, 49});
    }
    SUBCASE("drain retires what is in flight; a refill starts over at iteration 0") {
      std::vector<int> many(10, 1);
      pipe->fill_pipeline(many);
      CHECK(pipe->progress() == 0);
      pipe->drain();
      CHECK(squares.size() <= 10);
      squares.clear();
      pipe->fill_pipeline(std::vector<int>{3});
      CHECK(pipe->progress() == 0);
      CHECK_FALSE(pipe->progress());
      CHECK(squares == std::vector<int>{16});
    }
    SUBCASE("fill twice without drain is an error") {
      pipe->fill_pipeline(std::vector<int>{1});
      CHECK_THROWS_AS(pipe->fill_pipeline(std::vector<int>{1}), swp::PipelineStateError);
      pipe->drain();
    }
    SUBCASE("progress before fill is an error") {
      CHECK_THROWS_AS(pipe->progress(), swp::PipelineStateError);
    }
    SUBCASE("run_serial and run_one_serial_iter compute the same results") {
      auto stats = pipe->run_serial(std::vector<int>{2, 3});
      CHECK(stats.iterations == 2);
      pipe->run_one_serial_iter(4, 7);
      CHECK(squares == std::vector<int>{9, 16, 25});
    }
  }
}

TEST_CASE("reading an undeclared producer is an error naming both tasks") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<TypedCtx> plan;
  auto load = plan.add("Load", [](TypedCtx& ctx) -> swp::Co<int> { co_return ctx.batch; });
  plan.add("Peek", [load](TypedCtx& ctx) -> swp::Co<void> { (void)co_await ctx.get(load); });
  swp::ClockPipeline<TypedCtx> pipe(rt, plan);
  pipe.fill_pipeline(std::vector<int>{1});
  try {
    pipe.progress();
    FAIL("no error");
  } catch (const swp::TaskError& e) {
    CHECK(e.task() == "Peek");
    CHECK_THROWS_WITH_AS(std::rethrow_exception(e.nested()),
                         doctest::Contains("task 'Peek' reads the output of 'Load' without declaring it"),
                         swp::UndeclaredDependency);
  }
}

TEST_CASE("a body bound for another context type is rejected naming the task") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<TypedCtx> plan;
  plan.add("Load", [](TypedCtx&) {});
  using Other = swp::IterContext<double>;
  CHECK_THROWS_WITH_AS(swp::ClockPipeline<Other>(rt, plan), doctest::Contains("task 'Load'"),
                       std::invalid_argument);
}
