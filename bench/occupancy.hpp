#pragma once
// `swp-bench occupancy`: where the threads of a pipeline with real work spend their time, on
// the chain of `swp-bench dispatch` (4 serial stages, 4 in flight, the same body everywhere).

#include <vector>

namespace swp_bench {

struct OccupancyOptions {
  int rounds = 7;                     ///< interleaved rounds; medians reported
  std::vector<double> work_us{1, 5};  ///< work per stage, µs (each > 0)
  unsigned threads = 2;               ///< threads of every system (swp: workers + the caller)
  double work_ms = 100;               ///< window of a measurement, in ms of serial work
  bool co_runner = false;             ///< beside a process spinning on the last core
};

/// Every body of every stage records its thread and its start and end; the swp engines'
/// `on_retire` records when each iteration retired. Over the window (after a tenth as warm-up),
/// per system (dataflow, clock, taskflow) and work size, medians over the rounds of:
///   - `busy_share_<tag>`: time in bodies ÷ (threads × window): 1 is every thread always
///     working; what is missing is dispatch, waiting for work, and the caller's own duties;
///   - `same_stage_share_<tag>`: of the bodies a thread runs, the share that follow a body of
///     the same stage on that thread: high when iterations move through the stages in convoys
///     (a lane's backlog run back to back), low when a thread carries iterations along;
///   - `retire_lag_ns_<tag>` (swp only): from the end of an iteration's last body to its
///     `on_retire` on the caller's thread, the median over the window's iterations;
///   - `ns_per_task_<tag>`.
/// `<tag>` is `<system>[_corunner]_<w>us_<n>t`. Rounds rotate the systems' order.
void run_occupancy(const OccupancyOptions& options);

}  // namespace swp_bench
