#include "soak.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "metric.hpp"
#include "swp/async/fiber_bridge.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace swp_bench {

namespace {

using namespace std::chrono_literals;

struct SoakFields {
  std::int64_t loss = 0;
};
using SoakCtx = swp::IterContext<std::int64_t, SoakFields>;

// Load (stream "copy") yields a small heap buffer, Decode sums it on a fiber, Train (stream
// "compute") reads the sum and waits for its own previous iteration: what a steady state
// exercises (frames, futures, fibers, stream events, buffers allocated and freed per
// iteration) in a plan small enough for a million iterations.
swp::Plan<SoakCtx> soak_plan() {
  swp::Plan<SoakCtx> plan;
  auto load = plan.add("Load", [](SoakCtx& ctx, swp::TaskScope& scope) -> swp::Co<std::vector<int>> {
    scope.device_work(1ns);
    co_return std::vector<int>(64, static_cast<int>(ctx.batch % 1000));
  }, {.stage = 0, .stream = "copy", .thread_group = "io"});
  auto decode = plan.add("Decode", swp::blocking([load](SoakCtx& ctx) -> std::int64_t {
    const auto& values = swp::blocking_await(ctx.get(load));
    return std::accumulate(values.begin(), values.end(), std::int64_t{0});
  }), {.stage = 1, .thread_group = "cpu"}, swp::reads(load));
  auto train = plan.add("Train", [decode](SoakCtx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
    ctx.loss = co_await ctx.get(decode);
    scope.device_work(1ns);
  }, {.stage = 1, .stream = "compute", .thread_group = "compute"}, swp::reads(decode));
  plan.inter_iter_deps = {{train, train}};
  return plan;
}

// The same shape with synthetic costs, for the `swp run` path.
swp::PipelinePlan synthetic_plan() {
  swp::PipelinePlan plan;
  plan.add("Load", {.stage = 0, .stream = "copy", .thread_group = "io"}, {.device_us = 0.001});
  plan.add("Decode", {.stage = 1, .thread_group = "cpu"}, {});
  plan.add("Train", {.stage = 1, .stream = "compute", .thread_group = "compute"},
           {.device_us = 0.001});
  plan.intra_iter_deps = {{"Decode", "Load"}, {"Train", "Decode"}};
  plan.inter_iter_deps = {{"Train", "Train"}};
  return plan;
}

// Resident set before the run's pipeline exists, after the warm-up, after the last iteration.
struct Readings {
  std::int64_t start_kb = 0;
  std::int64_t warm_kb = 0;
  std::int64_t end_kb = 0;
};

void report(const std::string& run, const Readings& r) {
  metric("rss_growth_kb_" + run, static_cast<double>(r.end_kb - r.warm_kb), "kB");
  metric("rss_setup_kb_" + run, static_cast<double>(r.warm_kb - r.start_kb), "kB");
  metric("rss_kb_" + run, static_cast<double>(r.end_kb), "kB");
}

template <class Pipe, class... Depth>
Readings soak_engine(const SoakOptions& o, Depth... depth) {
  Readings r;
  r.start_kb = resident_kb();
  swp::Runtime runtime;  // host, default workers
  Pipe pipe(runtime, soak_plan(), depth...);
  std::int64_t checksum = 0;
  pipe.on_retire([&](const SoakCtx& ctx) { checksum += ctx.loss; });
  std::int64_t next = 0;
  pipe.fill_pipeline([&]() -> std::optional<std::int64_t> {
    if (next >= o.iters) return std::nullopt;
    return next++;
  });
  std::int64_t retired = 0;
  while (pipe.progress()) {
    if (++retired == o.warmup) r.warm_kb = resident_kb();
  }
  r.end_kb = resident_kb();
  if (retired != o.iters) throw std::runtime_error("soak: retired " + std::to_string(retired) +
                                                   " of " + std::to_string(o.iters));
  // sum of 64 * (b % 1000) over every batch b: the bodies really ran, once per iteration.
  std::int64_t expected = 0;
  for (std::int64_t b = 0; b < o.iters; ++b) expected += 64 * (b % 1000);
  if (checksum != expected) throw std::runtime_error("soak: the bodies computed a wrong sum");
  return r;
}

// Reads the resident set from inside a `run_synthetic` run: once when the warm-up iteration
// finishes its first task, and after every task of the last iteration (the largest counts).
class RssProbe final : public swp::RunObserver {
 public:
  RssProbe(std::int64_t warmup, std::int64_t last) : warmup_(warmup), last_(last) {}

  void run_starting(swp::Runtime&, const swp::PlanGraph&) override {}
  void run_finished() noexcept override {}
  void device_work(const swp::Stream&, const swp::DeviceWork&) noexcept override {}
  void task_released(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
  void task_started(swp::TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
  void task_finished(swp::TaskIndex, std::int64_t iter, const swp::Lane&, bool) noexcept override {
    if (iter == warmup_ - 1 && !warm_taken_.exchange(true)) warm_kb_ = resident_kb();
    if (iter == last_) {
      const std::int64_t kb = resident_kb();
      std::int64_t seen = end_kb_.load();
      while (kb > seen && !end_kb_.compare_exchange_weak(seen, kb)) {
      }
    }
  }

  [[nodiscard]] Readings readings(std::int64_t start_kb) const {
    return {start_kb, warm_kb_.load(), end_kb_.load()};
  }

 private:
  std::int64_t warmup_, last_;
  std::atomic<bool> warm_taken_{false};
  std::atomic<std::int64_t> warm_kb_{0}, end_kb_{0};
};

Readings soak_swp_run(const SoakOptions& o) {
  const std::int64_t start_kb = resident_kb();
  RssProbe probe(o.warmup, o.iters - 1);
  swp::SyntheticRunOptions run;
  run.engine = swp::EngineKind::data_flow;  // swp run's default engine
  run.iters = static_cast<int>(o.iters);
  run.observer = &probe;
  const auto result = swp::run_synthetic(synthetic_plan(), run);
  if (result.stats.iterations != o.iters)
    throw std::runtime_error("soak: swp run retired " + std::to_string(result.stats.iterations) +
                             " of " + std::to_string(o.iters));
  return probe.readings(start_kb);
}

}  // namespace

std::int64_t resident_kb() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) throw std::runtime_error("cannot read /proc/self/statm");
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

void run_soak(const SoakOptions& options) {
  SoakOptions o = options;
  if (o.warmup == 0) o.warmup = o.iters / 10;
  if (o.warmup < 1 || o.warmup >= o.iters)
    throw std::invalid_argument("soak: --warmup must be at least 1 and below --iters (" +
                                std::to_string(o.iters) + ")");
  report("dataflow", soak_engine<swp::DataFlowPipeline<SoakCtx>>(o, 3));
  report("clock", soak_engine<swp::ClockPipeline<SoakCtx>>(o));
  report("swp_run", soak_swp_run(o));
}

}  // namespace swp_bench
