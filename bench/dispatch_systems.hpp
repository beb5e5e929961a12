#pragma once
// The systems `swp-bench dispatch` compares, each running the same chain: 4 serial stages,
// 4 iterations in flight, stage_body() in every stage (docs/benchmarks.md, "Dispatch").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "swp/engine/fast_paths.hpp"

namespace swp_bench {

inline constexpr int chain_stages = 4;
inline constexpr int chain_in_flight = 4;

/// data_flow_ref, clock_ref: the swp engines on their reference path (swp::FastPaths::none()),
/// measured with --reference only. data_flow_next, clock_next: the swp engines driven by
/// `co_await pipe.next()` in a coroutine (the drive form of services and co_await training
/// loops), measured with --next only.
enum class System {
  serial,
  data_flow,
  clock,
  tbb,
  taskflow,
  data_flow_ref,
  clock_ref,
  data_flow_next,
  clock_next
};
inline constexpr System all_systems[] = {System::serial, System::data_flow, System::clock,
                                         System::tbb, System::taskflow};
inline constexpr System reference_systems[] = {System::data_flow_ref, System::clock_ref};
inline constexpr System next_systems[] = {System::data_flow_next, System::clock_next};

/// The name in metric lines: serial, dataflow, clock, tbb, taskflow, dataflow_ref, clock_ref,
/// dataflow_next, clock_next.
const char* system_label(System system) noexcept;
/// The system of a label, or nothing.
std::optional<System> system_of_label(std::string_view label) noexcept;

/// One measurement's shape.
struct ChainRun {
  /// Threads that run stages: swp `workers = threads - 1` plus the caller, which helps while
  /// it waits in run() (the _next systems: `workers = threads`, the caller waits in
  /// swp::sync_wait while the driving coroutine runs on them); oneTBB `global_control(max_allowed_parallelism, threads)` and
  /// `task_arena(threads)` (the caller is one of them); Taskflow `tf::Executor(threads)` (the
  /// caller waits). The serial loop ignores it.
  unsigned threads = 2;
  std::uint64_t steps = 0;  ///< stage_body()'s steps in every stage
  /// The fast paths of the dataflow and clock systems (unset: the runtime's default, which
  /// SWP_FAST_PATHS sets); the _ref systems always run FastPaths::none().
  std::optional<swp::FastPaths> fast_paths;
  long warmup = 1'000;      ///< iterations the last stage finishes before the window opens
  long iters = 100'000;     ///< iterations the last stage finishes inside the window
  int settle_ms = 20;       ///< idle time between setting the system up and running it
  /// When > 0: the call stacks of this many allocations inside the window are recorded
  /// (counting_allocator.hpp), to be printed by the caller.
  std::size_t capture_sites = 0;
};

struct ChainSample {
  double ns_per_task = 0;      ///< window time / (iters × 4)
  double allocs_per_task = 0;  ///< operator new calls of the whole process in the window, per task
};

/// Sets `system` up (a fresh swp Runtime and pipeline, oneTBB arena, Taskflow executor), sleeps
/// `settle_ms`, then runs warmup + iters + 4 iterations through the chain. The window is
/// timed inside the last stage, identically for every system: it opens when that stage
/// finishes iteration `warmup` and closes when it finishes iteration `warmup + iters`, with 4
/// iterations still to come, so the chain is full throughout. Throws std::logic_error when
/// the last stage did not run exactly once per iteration.
ChainSample measure_chain(System system, const ChainRun& run);

}  // namespace swp_bench
