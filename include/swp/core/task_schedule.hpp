#pragma once
// TaskSchedule: where and when one task of a plan runs (seed 003, class TaskSchedule).

#include <optional>
#include <string>

namespace swp {

/// The largest stage a plan may give a task (validation rule `stage_limit`): depth, the
/// clock engine's slots and the iterations an analysis walks grow with the stage, so a plan
/// is at most 4096 stages deep — as many slots as `swp run --max-depth` allows.
inline constexpr int max_stage = 4095;

/// Per-task scheduling configuration. Every field has a default; the simplest plan sets only
/// `stage`.
///
/// - `stage` k means: in period p the task processes iteration p − k (clock-driven engine);
///   0 <= k <= max_stage.
/// - `stream` names the device stream the task's device work is queued on ("default" is the
///   default stream). The device layer maps names to real streams; the plan's
///   `stream_aliases` may make this name stand for another stream (schedules show the name).
/// - `thread_group` names the lane: tasks of one lane run one at a time, in submission order.
/// - `globally_ordered` tasks pass the submission sequencer, so every rank issues them in the
///   same order (what keeps NCCL collectives from deadlocking).
/// - `stream_priority`, when set, is the priority of the stream the task's device work runs on
///   (its `stream`, aliases resolved), CUDA's convention: lower numbers are served first, 0
///   is the default, and the cuda backend clamps to the device's range (TorchRec makes its
///   memcpy and data_dist streams at -1, so copies overtake compute). It belongs to the
///   stream: the tasks on one stream that set it must agree (validation rule
///   `stream_priority`); a task that leaves it unset takes the stream as the others make it.
///
/// Example: `TaskSchedule{.stage = 1, .stream = "data_dist", .globally_ordered = true,
///                        .stream_priority = -1}`.
struct TaskSchedule {
  int stage = 0;
  std::string stream = "default";
  std::string thread_group = "default";
  bool globally_ordered = false;
  std::optional<int> stream_priority = std::nullopt;

  friend bool operator==(const TaskSchedule&, const TaskSchedule&) = default;
};

}  // namespace swp
