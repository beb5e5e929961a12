#pragma once
// The items a host or sim stream queues (private to src/device).

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>

#include "swp/device/event.hpp"
#include "swp/device/work_tag.hpp"

namespace swp::detail {

struct StreamItem {
  enum class Kind { work, record, wait, call, fault } kind;
  Clock::duration duration{};  // work: its length; call: its modelled device time (sim)
  WorkTag tag{};
  Event* event = nullptr;  // record: the event; wait: the awaited one
  std::uint64_t generation = 0;
  Clock::time_point enqueued{};
  std::function<void()> call{};  // call: what to run (empty for the other kinds: no allocation)
  std::exception_ptr fault{};    // fault: what the stream faults with when it gets there
};

/// What a host or sim stream does with `item` once it faulted: work and callables do not run
/// (a faulted device runs nothing); a record completes its generation failed, so that no
/// waiter hangs; waits and later faults pass.
inline void run_faulted(const StreamItem& item, const std::exception_ptr& fault,
                        Clock::time_point now) {
  if (item.kind == StreamItem::Kind::record) item.event->fail(item.generation, now, fault);
}

/// The fault item a stream queues when it waits on a generation that failed: it faults too,
/// with the same error (the first stream's DeviceFault).
inline StreamItem fault_item(std::exception_ptr fault, Clock::time_point now) {
  StreamItem item{StreamItem::Kind::fault, {}, {}, nullptr, 0, now};
  item.fault = std::move(fault);
  return item;
}

/// Emulated completion time of `generation` of `e`, or `fallback` if the event has moved on
/// too far for it to be remembered.
inline Clock::time_point ideal_completion(const Event& e, std::uint64_t generation,
                                          Clock::time_point fallback) {
  const auto completed_at = e.completed_at(generation);
  return e.reached(generation + 8) ? fallback : completed_at;
}

}  // namespace swp::detail
