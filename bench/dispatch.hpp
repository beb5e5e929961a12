#pragma once
// `swp-bench dispatch`: the per-task cost of both swp engines against oneTBB.

#include <cstddef>

namespace swp_bench {

struct DispatchOptions {
  long iters = 200'000;        ///< timed (steady-state) iterations per measurement, empty tasks
  long device_iters = 10'000;  ///< the same for tasks with device work (each costs far more)
  long warmup = 1'000;         ///< iterations run before each timed window
  int rounds = 5;              ///< interleaved rounds; the issue's figures use at least 5
  bool busy_core = false;
  /// When > 0: after the rounds, one untimed steady-state run per swp engine and workload
  /// (2 threads) records the call stacks of this many allocations, printed on stderr.
  std::size_t alloc_sites = 0;
  /// When > 0: one more workload, "cpu", whose tasks (and oneTBB's filters) each spin this
  /// many microseconds on the CPU: whether two threads run real work in parallel.
  double task_us = 0;
  long task_iters = 2'000;  ///< timed iterations per measurement of the cpu workload
};

/// Runs the dispatch benchmark and prints its metric lines; see docs/benchmarks.md.
///
/// Workload: four tasks in a chain, one lane each, stages 0..3, 4 iterations in flight;
/// "empty" tasks do nothing, "device" tasks each enqueue a 1 ns device item on their own host
/// stream s0..s3. oneTBB runs the empty chain as 4 serial_in_order filters with 4 tokens.
/// Each of `rounds` rounds measures, for 2 threads then 1 thread: oneTBB, data-flow, clock
/// (empty), then data-flow, clock (device). Medians over rounds and their ratios are
/// reported, and the minima.
void run_dispatch(const DispatchOptions& options);

}  // namespace swp_bench
