#pragma once
// Plans with synthetic costs, and the traces of their runs, for the timeline tests.

#include <map>
#include <string>

#include "support/plans.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/trace/trace_recorder.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace swp::test {

/// Costs (cpu_us, device_us) for the tasks of the seed's SparseDist plan, shaped like the
/// seed's timelines: a short H2D, a medium input distribution, Forward/Backward dominating.
inline const std::map<std::string, SyntheticCost>& sparse_dist_costs() {
  static const std::map<std::string, SyntheticCost> costs = {
      {"H2D", {.cpu_us = 20, .device_us = 300}},
      {"InputDistStart", {.cpu_us = 30, .device_us = 200}},
      {"InputDistWait", {.cpu_us = 10, .device_us = 150}},
      {"ZeroGrad", {.cpu_us = 5, .device_us = 20}},
      {"WaitBatch", {.cpu_us = 5, .device_us = 10}},
      {"Forward", {.cpu_us = 40, .device_us = 400}},
      {"Backward", {.cpu_us = 40, .device_us = 500}},
      {"OptimizerStep", {.cpu_us = 20, .device_us = 150}},
  };
  return costs;
}

/// tests/data/seed000/sparse_dist.json with sparse_dist_costs(); with `io_lane`, H2D and the
/// input distribution are submitted from lane "io", so the compute lane waits for them.
inline PipelinePlan costed_sparse_dist(bool io_lane = false) {
  PipelinePlan plan = parse_plan(read_text(seed_plan_path("sparse_dist"))).plan;
  for (auto& planned : plan.tasks) {
    planned.cost = sparse_dist_costs().at(planned.task.name);
    if (io_lane && planned.schedule.stream != "default") planned.schedule.thread_group = "io";
  }
  return plan;
}

/// The trace of a synthetic run of `plan` (its costs) over `iters` iterations.
inline Trace record_synthetic(const PipelinePlan& plan, EngineKind engine, int iters,
                              Backend backend = Backend::sim) {
  TraceRecorder recorder;
  SyntheticRunOptions options{.engine = engine, .iters = iters};
  options.runtime = {.backend = backend, .workers = 2};
  options.observer = &recorder;
  run_synthetic(plan, options);
  return recorder.trace();
}

}  // namespace swp::test
