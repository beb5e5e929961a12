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
