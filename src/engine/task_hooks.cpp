// TaskHooks: the observer's calls and NVTX ranges of an engine's instances.

#include "swp/engine/detail/task_hooks.hpp"

#include <utility>

#include "swp/device/nvtx_ranges.hpp"
#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

bool TaskHooks::set_nvtx(bool on) noexcept {
  nvtx_ = on && nvtx_compiled();
  return nvtx_;
}

void TaskHooks::started(Instance& in, bool serial) const noexcept {
  const TaskInfo& info = *in.info;
  if (observer_ != nullptr) observer_->task_started(in.task(), in.iter(), *info.lane);
  if (!nvtx_) return;
  char name[128];
  nvtx_range_name(name, sizeof name, in.core().graph().name(in.task()), in.iter(), serial,
                  info.routine != nullptr && info.routine->shortcut());
  in.cold().nvtx_range = nvtx_range_start(name);
}

void TaskHooks::finished(Instance& in, bool ok) const noexcept {
  if (in.cold().nvtx_range != 0) nvtx_range_end(std::exchange(in.cold().nvtx_range, 0));
  if (observer_ != nullptr) observer_->task_finished(in.task(), in.iter(), *in.info->lane, ok);
}

}  // namespace swp::detail
