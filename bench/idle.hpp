#pragma once
// `swp-bench idle`: the CPU a Runtime's threads use while nothing is left to run.

namespace swp_bench {

struct IdleOptions {
  unsigned workers = 1;  ///< the runtime's pool workers
  int ms = 1000;         ///< wall time each state is measured over
};

/// The process's CPU time (user + system, every thread) per second of wall time, while the
/// caller sleeps and the runtime's workers have nothing to run: `idle_cpu_ms_per_s_<state>`
/// for a runtime just made (`fresh`), with a pipeline whose run ended (`<engine>_between_runs`),
/// and with a pipeline whose run is in flight while its caller is away (`<engine>_away`:
/// 10,000 iterations driven, then no progress() call; the iterations admitted meanwhile finish
/// on the workers). Each pipeline is a chain of 4 empty tasks, each alone on its lane (where the
/// engines' shortcuts apply). Target: < 1 ms per second (issue 59: idle costs nothing).
void run_idle(const IdleOptions& options);

}  // namespace swp_bench
