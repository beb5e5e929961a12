#pragma once
// The items a host or sim stream queues (private to src/device).

#include <cstdint>
#include <functional>
#include <stdexcept>

#include "swp/device/event.hpp"
#include "swp/device/work_tag.hpp"

namespace swp::detail {

struct StreamItem {
  enum class Kind { work, record, wait, call } kind;
  Clock::duration duration{};  // work: its length; call: its modelled device time (sim)
  WorkTag tag{};
  Event* event = nullptr;  // record: the event; wait: the awaited one
  std::uint64_t generation = 0;
  Clock::time_point enqueued{};
  std::function<void()> call{};  // call: what to run (empty for the other kinds: no allocation)
};

/// Emulated completion time of `generation` of `e`, or `fallback` if the event has moved on
/// too far for it to be remembered.
inline Clock::time_point ideal_completion(const Event& e, std::uint64_t generation,
                                          Clock::time_point fallback) {
  const auto completed_at = e.completed_at(generation);
  return e.reached(generation + 8) ? fallback : completed_at;
}

}  // namespace swp::detail
