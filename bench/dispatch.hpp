#pragma once
// `swp-bench dispatch`: both swp engines against oneTBB, Taskflow and a plain serial loop,
// on the same chain with the same stage bodies (docs/benchmarks.md, "Dispatch").

#include <cstddef>
#include <string>
#include <vector>

namespace swp_bench {

struct DispatchOptions {
  int rounds = 7;              ///< interleaved rounds; medians and minima over them
  long iters = 200'000;        ///< window iterations per measurement, empty bodies
  long warmup = 1'000;         ///< iterations before each window (at most a quarter of it)
  /// Window length of a measurement with work, in serial work: its iterations are
  /// work_ms × 1000 / (4 × work µs) (1 µs: 25,000; 5 µs: 5,000 by default). On the CI kind,
  /// 20 ms windows gave 2-thread 5 µs samples from 2.6 to 5.9 µs; 100 ms mostly within ±7%.
  double work_ms = 100;
  int settle_ms = 20;                        ///< idle time before every measurement
  std::vector<unsigned> threads = {1, 2};    ///< thread counts measured
  std::vector<double> work_us = {0, 1, 5};  ///< work per stage, µs (0: empty bodies)
  bool co_runner = false;  ///< everything measured beside a spinning process on one core
  /// Also measure both swp engines on their reference path (swp::FastPaths::none(): systems
  /// dataflow_ref and clock_ref), with ratios of each engine to its reference.
  bool reference = false;
  /// Also measure both swp engines driven by `co_await pipe.next()` from a coroutine on a
  /// pool of `threads` workers (systems dataflow_next and clock_next), with their ratios to
  /// Taskflow and to the serial loop.
  bool next = false;
  /// The fast paths of the dataflow and clock systems, as swp::FastPaths::parse reads them
  /// ("all", "none", "lane_claims,in_place", ...). Empty: the default (SWP_FAST_PATHS, else all).
  std::string fast_paths;
  /// stage_body() steps per µs; 0: calibrated at start (give it to compare runs exactly, or
  /// under valgrind, whose clock calibration would be meaningless).
  double steps_per_us = 0;
  /// A system's label (serial, dataflow, clock, tbb, taskflow, dataflow_ref, clock_ref,
  /// dataflow_next, clock_next): only one measurement of it,
  /// the first --threads and --work-us values, `iters` window iterations whatever the work,
  /// for callgrind. Empty: the rounds.
  std::string only;
  /// When > 0: after the rounds, one untimed window per swp engine (2 threads, empty bodies)
  /// records the call stacks of this many allocations, printed on stderr.
  std::size_t alloc_sites = 0;
};

/// Runs the dispatch benchmark and prints its metric lines; see docs/benchmarks.md.
///
/// Each round measures, for every thread count and every work size, every system once, in an
/// order rotated by one each round (serial, dataflow, clock, tbb, taskflow, then dataflow
/// first, ...). Reported per (system, work, threads): the median and minimum ns per task, the
/// median allocations per task, and ratios of the medians to Taskflow, oneTBB and the serial
/// loop. Throws std::invalid_argument for an option out of range or an unknown --only label.
void run_dispatch(const DispatchOptions& options);

}  // namespace swp_bench
