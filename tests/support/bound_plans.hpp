#pragma once
// Synthetic plans bound to bodies whose results can be checked against a serial run: each task
// computes a value from its batch, its intra dependencies' outputs (read through ctx.get) and
// its inter dependencies' previous values, and spends the plan's synthetic costs. Shared by
// the random-plan property tests and the fault injection suite.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "swp/core/pipeline_plan.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::test {

using BoundCtx = IterContext<std::uint64_t>;

inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2);
  return a * 0xff51afd7ed558ccdULL;
}

// Per-(task, iteration) results, shared by all instances of a run.
struct Results {
  std::mutex mutex;
  std::map<std::pair<TaskIndex, std::int64_t>, std::uint64_t> value;
  std::map<std::pair<TaskIndex, std::int64_t>, int> runs;
  std::atomic<int> active{0};  // bodies started and not ended (returned, thrown or cancelled)
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
  void clear() {
    std::lock_guard lock(mutex);
    value.clear();
    runs.clear();
  }
};

// Called by every bound body after its work, before it records its value (fault injection):
// the body awaits what it returns, unless it is empty (no fault). That may throw, or suspend.
using BodyHook = std::function<Co<void>(TaskIndex task, std::int64_t iter)>;

// Counts a body in Results::active for as long as its frame lives.
class ActiveBody {
 public:
  explicit ActiveBody(std::atomic<int>& active) : active_(active) { ++active_; }
  ActiveBody(const ActiveBody&) = delete;
  ActiveBody& operator=(const ActiveBody&) = delete;
  ~ActiveBody() { --active_; }

 private:
  std::atomic<int>& active_;
};

// Binds every task of a synthetic plan to a body computing its value (see above). `fail_at`
// makes one (task, iteration of the run) throw; `hook`, when given, outlives the plan's runs.
inline Plan<BoundCtx> bind(const PipelinePlan& source, Results& results,
                           std::pair<TaskIndex, std::int64_t> fail_at = {~TaskIndex{0}, -1},
                           const BodyHook* hook = nullptr) {
  const auto graph = validate(source);
  Plan<BoundCtx> plan;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    std::vector<Output<std::uint64_t>> intra;
    for (TaskIndex d : graph.intra_deps(t)) intra.push_back({TaskHandle{d, graph.name(d)}});
    std::vector<TaskIndex> inter(graph.inter_deps(t).begin(), graph.inter_deps(t).end());
    const auto cost = graph.cost(t);
    plan.add(
        graph.name(t),
        [t, intra, inter, cost, &results, fail_at, hook](
            BoundCtx& ctx, TaskScope& scope) -> Co<std::uint64_t> {
          const ActiveBody active(results.active);
          // Results are keyed by the iteration's place in its run (iteration numbers go on
          // across runs; a serial reference numbers from 0).
          const std::int64_t i = ctx.iter_idx - ctx.first_iter;
          std::uint64_t v = mix(t, ctx.batch);
          for (const auto& h : intra) v = mix(v, co_await ctx.get(h));
          if (ctx.has_previous())
            for (TaskIndex d : inter) v = mix(v, results.get(d, i - 1));
          if (cost.cpu_us > 0)
            co_await scope.cpu_work(std::chrono::microseconds(static_cast<int>(cost.cpu_us)));
          if (cost.device_us > 0)
            scope.device_work(std::chrono::microseconds(static_cast<int>(cost.device_us)));
          if (std::pair{t, i} == fail_at) throw std::runtime_error("injected");
          if (hook != nullptr)
            if (Co<void> fault = (*hook)(t, i); fault.valid()) co_await std::move(fault);
          results.put(t, i, v);
          co_return v;
        },
        graph.schedule(t), cost);
  }
  plan.intra_iter_deps = source.intra_iter_deps;
  plan.inter_iter_deps = source.inter_iter_deps;
  plan.stream_aliases = source.stream_aliases;
  return plan;
}

}  // namespace swp::test
