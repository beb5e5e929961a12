#pragma once
// `swp-bench soak`: memory growth over a long run of a small plan, both engines and `swp run`.

#include <cstdint>

namespace swp_bench {

struct SoakOptions {
  std::int64_t iters = 1'000'000;  ///< iterations per run
  std::int64_t warmup = 0;         ///< iterations before the first RSS reading; 0: iters / 10
};

/// Runs `iters` iterations of a small plan three times — DataFlowPipeline and ClockPipeline
/// on the host runtime (task bodies: a coroutine, a swp::blocking body on a fiber, device work
/// on two streams), and the `swp run` path (`run_synthetic` of a synthetic-cost plan,
/// in-process) — and prints per run `metric rss_growth_kb_<run> <kB> kB`: the resident set
/// after the last iteration retired minus the resident set after `warmup` iterations (target
/// 0: nothing may grow per iteration once warm), `rss_setup_kb_<run>`, what the run took
/// from before its pipeline existed to the end of the warm-up, and `rss_kb_<run>`, the
/// resident set at the end. <run> is dataflow, clock or swp_run. See docs/benchmarks.md.
/// Throws std::invalid_argument for a warm-up not below `iters`, std::runtime_error when a run
/// retired too few iterations or its bodies computed a wrong result.
void run_soak(const SoakOptions& options);

/// The resident set of this process in kB (/proc/self/statm).
std::int64_t resident_kb();

}  // namespace swp_bench
