#pragma once
// Profiled costs: a plan's synthetic costs replaced by what TaskProfiler measured, so that the
// tuner (and the sim backend) reason about the tasks as they ran, not as they were guessed.

#include "swp/core/pipeline_plan.hpp"
#include "swp/tune/profile_result.hpp"

namespace swp {

/// Where the measured time of a task without a plan cost goes.
enum class MeasuredTimeOn {
  /// device_us on the task's stream: what the tasks of GPU pipelines mostly are (their CPU
  /// part enqueues and overlaps; the profiler's serial iterations wait for the device).
  device,
  /// cpu_us on the task's lane: host work (loaders, parsing, CPU optimizers).
  cpu,
};

/// `plan` with each profiled task's synthetic cost set to its measured exposed time.
///
/// The profiler sees one number per task, the time the serial iteration loses to it; it cannot
/// tell CPU time from device time. So a task whose plan cost is non-zero keeps its CPU/device
/// split, scaled so that cpu_us + mean device_us equals the exposed time (jitter keeps its
/// ratio to device_us); a task with zero cost gets it all on `costless` (device by default).
/// Tasks the profile does not name (skipped by the profiler) keep their cost; nothing else of
/// the plan changes.
///
/// Errors: std::invalid_argument naming every profiled task the plan does not have (a profile
/// of another plan), a task measured twice, or a negative or non-finite exposed time.
///
/// Example:
/// ```
/// auto measured = swp::TaskProfiler(pipe).profile(batch);
/// auto tuned = swp::tune_plan(plan, {.measured = measured});  // or:
/// auto costed = swp::with_profiled_costs(plan, measured);
/// ```
PipelinePlan with_profiled_costs(const PipelinePlan& plan, const ProfileResult& profile,
                                 MeasuredTimeOn costless = MeasuredTimeOn::device);

}  // namespace swp
