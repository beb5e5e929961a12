#pragma once
// Random valid plans for property tests: stages, streams, lanes, ordered tasks, intra and
// inter dependencies within the corollaries, synthetic costs. Deterministic per seed.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/names.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"

namespace swp::test {

struct RandomPlanShape {
  int min_tasks = 2, max_tasks = 8;
  int max_stage = 3;
  int streams = 3, lanes = 3;
  double intra_probability = 0.35, inter_probability = 0.15, ordered_probability = 0.15;
  double max_device_us = 40, max_cpu_us = 8;
  double device_probability = 0.7;  // that a task has device work
};

inline PipelinePlan random_plan(std::mt19937& rng, const RandomPlanShape& shape = {}) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  PipelinePlan plan;
  const int n = uniform(shape.min_tasks, shape.max_tasks);
  for (int t = 0; t < n; ++t) {
    TaskSchedule s;
    s.stage = uniform(0, shape.max_stage);
    s.stream = numbered("s", uniform(0, shape.streams - 1));
    s.thread_group = numbered("l", uniform(0, shape.lanes - 1));
    s.globally_ordered = chance(shape.ordered_probability);
    SyntheticCost c;
    c.device_us = chance(shape.device_probability) ? std::uniform_real_distribution<double>(1, shape.max_device_us)(rng) : 0;
    c.cpu_us = chance(0.5) ? std::uniform_real_distribution<double>(0, shape.max_cpu_us)(rng) : 0;
    plan.add(numbered("T", t), s, c);
  }
  // Intra deps point to lower-index tasks (acyclic) at a stage <= the dependent's.
  for (int t = 0; t < n; ++t)
    for (int d = 0; d < t; ++d)
      if (plan.tasks[d].schedule.stage <= plan.tasks[t].schedule.stage &&
          chance(shape.intra_probability))
        plan.intra_iter_deps.push_back({plan.tasks[t].task.name, plan.tasks[d].task.name});
  // Inter deps: any pair (self included) with dep.stage - task.stage <= 1.
  for (int t = 0; t < n; ++t)
    for (int d = 0; d < n; ++d)
      if (plan.tasks[d].schedule.stage - plan.tasks[t].schedule.stage <= 1 &&
          chance(shape.inter_probability))
        plan.inter_iter_deps.push_back({plan.tasks[t].task.name, plan.tasks[d].task.name});
  return plan;
}

/// A random plan and a run of it: 1 to `max_iterations` iterations, a depth of 1 to 5, one
/// batch per iteration.
struct RandomRun {
  PipelinePlan source;
  PlanGraph graph;
  std::int64_t iterations;
  int max_depth;
  std::vector<std::uint64_t> batches;
};

inline RandomRun random_run(std::mt19937& rng, int max_iterations,
                            const RandomPlanShape& shape = {}) {
  PipelinePlan source = random_plan(rng, shape);
  PlanGraph graph = validate(source);
  const std::int64_t iterations = std::uniform_int_distribution<int>(1, max_iterations)(rng);
  const int max_depth = std::uniform_int_distribution<int>(1, 5)(rng);
  std::vector<std::uint64_t> batches;
  for (std::int64_t i = 0; i < iterations; ++i) batches.push_back(rng());
  return {std::move(source), std::move(graph), iterations, max_depth, std::move(batches)};
}

}  // namespace swp::test
