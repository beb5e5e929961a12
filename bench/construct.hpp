#pragma once
// `swp-bench construct`: what building a large Plan<Ctx> and a pipeline from it costs.

namespace swp_bench {

struct ConstructOptions {
  int rounds = 7;  ///< interleaved rounds, a measurement of each size per round (medians)
};

/// For plans of 10k and 100k tasks (4 stages, 8 streams, 8 lanes; "independent": no
/// dependency, "reads": each task reads the one before, declared with swp::reads), times in
/// CPU milliseconds of this process: building the Plan<Ctx> (`construct_plan_<shape>_<n>_ms`),
/// then a DataFlowPipeline (max_depth 2) and a ClockPipeline on the sim runtime from it
/// (`construct_<engine>_<shape>_<n>_ms`, the constructor; `destroy_<engine>_..._ms`), and the
/// growth from 10k to 100k tasks (`construct_<what>_<shape>_growth`, target ≤ 11: linear is 10).
/// Also each pipeline's heap bytes per task (`bytes_per_task_<engine>_<shape>_<n>`), and what
/// memory alone costs at each size: a copy of the larger pipeline's bytes between buffers
/// already faulted in (`construct_copy_<shape>_<n>_ms`, `construct_copy_<shape>_growth`).
/// Rounds interleave the sizes. CPU time rather than wall time: comparable on a loaded
/// machine. docs/benchmarks.md.
void run_construct(const ConstructOptions& options);

}  // namespace swp_bench
