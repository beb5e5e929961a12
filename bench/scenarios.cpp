#include "scenarios.hpp"

#include <string>

#include "metric.hpp"
#include "swp/swp.hpp"

namespace swp_bench {

namespace {

swp::PipelinePlan three_stage(bool jitter) {
  swp::PipelinePlan plan;
  plan.add("Load", {.stage = 0, .stream = "s0", .thread_group = "l0"},
           {.cpu_us = 5,
            .device_us = 300,
            .jitter_every = jitter ? 10 : 0,
            .jitter_device_us = jitter ? 3000.0 : 0.0});
  plan.add("Dist", {.stage = 1, .stream = "s1", .thread_group = "l1"},
           {.cpu_us = 5, .device_us = 200});
  plan.add("Fwd", {.stage = 2, .stream = "s2", .thread_group = "l2"},
           {.cpu_us = 5, .device_us = 1000});
  plan.intra_iter_deps = {{"Dist", "Load"}, {"Fwd", "Dist"}};
  return plan;
}

}  // namespace

void run_scenario(const char* prefix, bool jitter, int iters) {
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

}  // namespace swp_bench
