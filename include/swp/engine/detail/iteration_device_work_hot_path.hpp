#pragma once
// IterationDeviceWork's questions, inline (not for direct use; included by
// engine_core_hot_path.hpp, as they need the whole EngineCore): each costs one load for an
// iteration that recorded no device work.

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/detail/iteration_device_work.hpp"

namespace swp::detail {

inline EngineCore& IterationDeviceWork::core() noexcept { return static_cast<EngineCore&>(*this); }
inline const EngineCore& IterationDeviceWork::core() const noexcept {
  return static_cast<const EngineCore&>(*this);
}

inline bool IterationDeviceWork::device_done(std::int64_t iter) const {
  const EngineCore& c = core();
  return !c.sync_of(iter).device() || device_events_done(c, iter);
}

inline bool IterationDeviceWork::await_slot() {
  // The slot's previous occupant has the entry after the next admission's.
  EngineCore& c = core();
  return !recorded_ever_.load(std::memory_order_relaxed) ||
         c.next_admit_ < static_cast<std::int64_t>(c.depth_) ||
         !c.sync_[c.entry_after(c.admit_entry_)].device() || await_slot_device(c, c.next_admit_);
}

// Always inline: once per retirement, where it is mostly the one load of a flag.
[[gnu::always_inline]] inline bool IterationDeviceWork::device_holds_oldest() const {
  return retire_after_device_ && !device_done(core().oldest_);
}

}  // namespace swp::detail
