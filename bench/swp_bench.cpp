// swp-bench: benchmarks printing `metric <name> <value> <unit>` lines, ratios measured in the
// same run.
//
//   swp-bench dispatch [--iters N]   per-task dispatch cost of both engines vs oneTBB
//   swp-bench overlap  [--iters N]   3-stage overlap scenario on host and sim, both engines
//   swp-bench jitter   [--iters N]   the same with a jittering loader: data-flow vs clock

#include <tbb/parallel_pipeline.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "swp/swp.hpp"

namespace {

using Clock = std::chrono::steady_clock;

void metric(const std::string& name, double value, const char* unit) {
  std::printf("metric %s %.6g %s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

// Four empty tasks in a chain, one lane each, stages 0..3.
swp::PipelinePlan chain_plan() {
  swp::PipelinePlan plan;
  for (int s = 0; s < 4; ++s)
    plan.add("T" + std::to_string(s), {.stage = s, .thread_group = "lane" + std::to_string(s)});
  for (int s = 1; s < 4; ++s)
    plan.intra_iter_deps.push_back({"T" + std::to_string(s), "T" + std::to_string(s - 1)});
  return plan;
}

double swp_dispatch_ns(swp::EngineKind engine, long iters) {
  swp::SyntheticRunOptions options;
  options.engine = engine;
  options.max_depth = 4;
  options.iters = static_cast<int>(iters);
  const auto result = swp::run_synthetic(chain_plan(), options);
  const double ns = std::chrono::duration<double, std::nano>(result.stats.elapsed).count();
  return ns / (static_cast<double>(iters) * 4);
}

double tbb_dispatch_ns(long iters) {
  long produced = 0;
  volatile long sink = 0;
  const auto start = Clock::now();
  tbb::parallel_pipeline(
      4,
      tbb::make_filter<void, long>(tbb::filter_mode::serial_in_order,
                                   [&](tbb::flow_control& fc) -> long {
                                     if (produced == iters) {
                                       fc.stop();
                                       return 0;
                                     }
                                     return produced++;
                                   }) &
          tbb::make_filter<long, long>(tbb::filter_mode::serial_in_order,
                                       [](long x) { return x; }) &
          tbb::make_filter<long, long>(tbb::filter_mode::serial_in_order,
                                       [](long x) { return x; }) &
          tbb::make_filter<long, void>(tbb::filter_mode::serial_in_order,
                                       [&](long x) { sink = x; }));
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return ns / (static_cast<double>(iters) * 4);
}

swp::PipelinePlan three_stage(bool jitter) {
  swp::PipelinePlan plan;
  plan.add("Load", {.stage = 0, .stream = "s0", .thread_group = "l0"},
           {.cpu_us = 5, .device_us = 300, .jitter_every = jitter ? 10 : 0,
            .jitter_device_us = jitter ? 3000.0 : 0.0});
  plan.add("Dist", {.stage = 1, .stream = "s1", .thread_group = "l1"}, {.cpu_us = 5, .device_us = 200});
  plan.add("Fwd", {.stage = 2, .stream = "s2", .thread_group = "l2"}, {.cpu_us = 5, .device_us = 1000});
  plan.intra_iter_deps = {{"Dist", "Load"}, {"Fwd", "Dist"}};
  return plan;
}

void scenario(const char* prefix, bool jitter, int iters) {
  for (auto backend : {swp::Backend::sim, swp::Backend::host}) {
    for (auto engine : {swp::EngineKind::clock, swp::EngineKind::data_flow}) {
      swp::SyntheticRunOptions o;
      o.engine = engine;
      o.max_depth = jitter ? 6 : 0;
      o.iters = iters;
      o.runtime.backend = backend;
      const auto r = swp::run_synthetic(three_stage(jitter), o);
      const std::string name = std::string(prefix) + "_" + std::string(swp::engine_name(engine)) +
                               "_" + std::string(swp::backend_name(backend));
      metric(name + "_us_per_iter", r.us_per_iter, "us");
      metric(name + "_efficiency", r.efficiency, "ratio");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"swp-bench: swp benchmarks (metric lines)"};
  app.require_subcommand(1);
  long dispatch_iters = 200'000;
  int scenario_iters = 400;
  auto* dispatch = app.add_subcommand("dispatch", "empty 4-task chain: ns per task, both engines and oneTBB");
  dispatch->add_option("--iters", dispatch_iters, "iterations")->check(CLI::Range(1L, 100'000'000L));
  auto* overlap = app.add_subcommand("overlap", "3-stage device overlap: efficiency, host and sim");
  overlap->add_option("--iters", scenario_iters, "iterations")->check(CLI::Range(20, 1'000'000));
  auto* jitter = app.add_subcommand("jitter", "3-stage overlap with a jittering loader");
  jitter->add_option("--iters", scenario_iters, "iterations")->check(CLI::Range(20, 1'000'000));
  CLI11_PARSE(app, argc, argv);

  if (dispatch->parsed()) {
    const double tbb = tbb_dispatch_ns(dispatch_iters);
    const double dataflow = swp_dispatch_ns(swp::EngineKind::data_flow, dispatch_iters);
    const double clock = swp_dispatch_ns(swp::EngineKind::clock, dispatch_iters);
    metric("ns_per_task_dataflow", dataflow, "ns");
    metric("ns_per_task_clock", clock, "ns");
    metric("ns_per_task_tbb", tbb, "ns");
    metric("dataflow_over_tbb", dataflow / tbb, "ratio");
    metric("clock_over_tbb", clock / tbb, "ratio");
  }
  if (overlap->parsed()) scenario("overlap", false, scenario_iters);
  if (jitter->parsed()) scenario("jitter", true, scenario_iters);
  return 0;
}
