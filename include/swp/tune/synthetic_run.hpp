#pragma once
// Running a plan on its synthetic costs and measuring it: what `swp run` and the benchmarks do.

#include <string_view>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/tune/profile_result.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/runtime.hpp"
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
};

/// What a synthetic run measured.
///
/// `us_per_iter` is the steady-state time per iteration: the spacing of iteration completion
/// times (the end of an iteration's last device work, or its CPU retirement when it has none)
/// between the end of the fill and the start of the drain. `bound_us_per_iter` is the
/// steady-state bound from the costs: the busiest stream's device time or the busiest lane's
/// CPU time per iteration, jitter averaged in. `efficiency` = bound / measured.
struct SyntheticRunResult {
  double us_per_iter = 0;
  double bound_us_per_iter = 0;
  double efficiency = 0;
  double serial_us_per_iter = 0;  ///< filled by callers that also run serially
  RunStats stats;
};

/// The steady-state bound of a plan's synthetic costs, microseconds per iteration.
double bound_us_per_iter(const PlanGraph& graph);

/// Runs `plan` (tasks without bodies: synthetic costs) and measures it.
/// Throws PlanError for an invalid plan, std::invalid_argument for bad options.
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
