#include "swp/trace/trace.hpp"

#include <algorithm>

namespace swp {

const char* kind_name(TraceSlice::Kind kind) noexcept {
  switch (kind) {
    case TraceSlice::Kind::task:
      return "task";
    case TraceSlice::Kind::wait:
      return "wait";
    case TraceSlice::Kind::device:
      return "device";
    case TraceSlice::Kind::segment:
      return "segment";
  }
  return "task";
}

Clock::duration Trace::span() const noexcept {
  Clock::duration end{};
  for (const auto& slice : slices) end = std::max(end, slice.end);
  return end;
}

std::string Trace::task_name(TaskIndex task) const {
  return task < tasks.size() ? tasks[task] : "task#" + std::to_string(task);
}

std::string Trace::instance_name(TaskIndex task, std::int64_t iter) const {
  return task_name(task) + "/" + std::to_string(iter);
}

std::string Trace::slice_name(const TraceSlice& slice) const {
  if (slice.kind == TraceSlice::Kind::segment)
    return slice.segment + " (" + instance_name(slice.task, slice.iter) + ")";
  if (slice.kind != TraceSlice::Kind::wait) return instance_name(slice.task, slice.iter);
  if (slice.waited_for.kind == TaskWait::Kind::turn) return "wait turn";
  return "wait " + instance_name(slice.waited_for.task, slice.waited_for.iter);
}

}  // namespace swp
