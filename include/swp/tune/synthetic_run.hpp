#pragma once
// Running a plan on its synthetic costs and measuring it: what `swp run` and the benchmarks do.

#include <string_view>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/tune/profile_result.hpp"
#include "swp/tune/task_profiler.hpp"

namespace swp {

enum class EngineKind { data_flow, clock };

/// "dataflow" / "clock"; parse_engine returns false for anything else.
std::string_view engine_name(EngineKind kind);
bool parse_engine(std::string_view name, EngineKind& kind);

struct SyntheticRunOptions {
  EngineKind engine = EngineKind::data_flow;
  int max_depth = 0;  ///< data-flow slots; 0: the plan's depth
  int iters = 200;
  RuntimeOptions runtime = {};
  /// Watches the run (e.g. a swp::TraceRecorder); nullptr: nothing is observed, at no cost.
  RunObserver* observer = nullptr;
  /// Each task instance as an NVTX range (Pipeline::enable_nvtx) for a profiler attached to
  /// the process; run_synthetic throws std::invalid_argument where NVTX is not compiled in
  /// (swp::nvtx_compiled()).
  bool nvtx = false;
};

/// The longest a synthetic run may last, in microseconds of its clock (about 31 years; the
/// clock counts int64 nanoseconds, 292 years). run_synthetic and profile_synthetic refuse a
/// run whose iterations, each taking every task's costs one after another, could exceed it.
inline constexpr double max_run_us = 1e15;

/// What a synthetic run measured.
///
/// The steady state is measured over the iterations between the fill (the first `slots`
/// iterations, `slots` the iterations in flight: the clock engine's depth or the data-flow
/// engine's slots) and the drain (the last `slots`); it takes at least min_steady_iters(slots)
/// iterations (`steady_state`).
///
/// - `us_per_iter`: the time per iteration of those iterations: the spacing of their
///   completion times (an iteration completes at the later of its retirement and the end of
///   its last device work), and never less than the span in which the busiest stream (or, on
///   sim, lane) did their work — that resource did all of it within the span, while the
///   spacing alone can undercount at the window's edges. Without a steady state: the whole
///   run's elapsed time per iteration, fill and drain included.
/// - `bound_us_per_iter`: the busiest stream's device time or the busiest lane's CPU time per
///   iteration over the same iterations (jitter as it falls in them).
/// - `efficiency` = bound / measured: at most 1 on sim, exactly; 0 when nothing took time.
///
/// Memory: the measurement keeps running extremes per stream and lane, nothing per iteration.
struct SyntheticRunResult {
  bool steady_state = false;  ///< enough iterations for the measurement above
  int slots = 0;              ///< the most iterations in flight (the fill and the drain)
  double us_per_iter = 0;
  double bound_us_per_iter = 0;
  double efficiency = 0;
  double serial_us_per_iter = 0;  ///< filled by callers that also run serially
  RunStats stats;
};

/// The fewest iterations whose steady state can be measured with up to `slots` in flight:
/// 2 × slots + 2 (the fill, the drain, and a completion spacing between them).
[[nodiscard]] std::int64_t min_steady_iters(int slots) noexcept;

/// The steady-state bound of a plan's synthetic costs, microseconds per iteration.
double bound_us_per_iter(const PlanGraph& graph);

/// Runs `plan` (tasks without bodies: synthetic costs) and measures it.
/// Throws PlanError for an invalid plan, std::invalid_argument for bad options and for a run
/// longer than `max_run_us`, and what the pipeline's run throws (TaskError, PipelineTimeout).
SyntheticRunResult run_synthetic(const PipelinePlan& plan, const SyntheticRunOptions& options);

struct SyntheticProfileOptions {
  ProfileOptions profile = {};
  RuntimeOptions runtime = {};
};

/// Profiles `plan`'s synthetic costs with TaskProfiler: serial iterations (all device work on
/// the default stream), one task shortcut at a time. On the sim backend the result is exact:
/// a task's exposed time is what removing its CPU and device time shortens the serial
/// iteration by. Tasks with bodies run their bodies. Throws as run_synthetic and
/// TaskProfiler::profile.
ProfileResult profile_synthetic(const PipelinePlan& plan, const SyntheticProfileOptions& options);

}  // namespace swp
