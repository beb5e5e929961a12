#pragma once
// WorkTag: which task instance a piece of device work belongs to.

#include <cstdint>

namespace swp {

/// What the enqueuer says a piece of device work is: the task instance (task index, iteration)
/// that queued it. The engines tag the work of every instance (TaskScope::device_work); a
/// stream passes the tag through to its observer untouched (DeviceWork::tag), which is how
/// traces and `swp run` attribute device time to tasks and iterations.
///
/// Two full-width fields, not one packed integer: any task index and any iteration the engine
/// can produce is represented exactly (a packed `iter << 16 | task` tag made task 65536 read
/// as task 0 of the next iteration).
///
/// Example: `stream.enqueue_work(300us, swp::WorkTag{.task = 2, .iter = 41});`
struct WorkTag {
  std::uint64_t task = 0;  ///< the task's index in its plan (swp::TaskIndex)
  std::int64_t iter = 0;   ///< the iteration

  friend bool operator==(const WorkTag&, const WorkTag&) = default;
};

}  // namespace swp
