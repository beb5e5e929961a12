#pragma once
// UncountedRuns' hot paths, inline (not for direct use; included by engine_core_hot_path.hpp,
// as they need the whole EngineCore): one instance's run, the completion of an iteration, and
// the questions both ask. In a header so that the release policies' flattened paths inline them.

#include <exception>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/detail/uncounted_runs.hpp"

namespace swp::detail {

inline EngineCore& UncountedRuns::core() noexcept { return static_cast<EngineCore&>(*this); }
inline const EngineCore& UncountedRuns::core() const noexcept {
  return static_cast<const EngineCore&>(*this);
}

template <class HandOver>
[[gnu::always_inline]] inline UncountedRuns::Outcome UncountedRuns::run(
    Instance& in, const TaskInfo& info, IterationSync& sync, const ContextSlot& slot,
    HandOver&& hand_over) noexcept {
  EngineCore& core = this->core();
  LaneClaim& claim = *info.claim;  // every task is in place: each has its lane's claim
  const Lane& lane = *info.lane;   // before the fence (see hold_claimed_lane)
  // The release's side of the claim, with the state it runs in, as InPlaceRuns::run does; a
  // revoked claim (or trouble) leaves the instance to the general release, which stores them
  // again, gives the claim up and queues it on its lane.
  if (core.attention_.load(std::memory_order_acquire) != 0 ||
      !claim.bypassing.load(std::memory_order_relaxed) ||
      !hold_claimed_lane(in, lane, claim, InstanceState::running)) [[unlikely]] {
    hand_over(false);
    return Outcome::not_started;
  }
  EngineCore::forget_last_failure(in);
  if (info.routine != nullptr) {
    ReleasedCo body;
    TaskScope& scope = sync.scopes[info.task];
    if (!EngineCore::call_routine(in, info, scope, slot.boxes[info.task].get(), slot, body))
        [[unlikely]] {
      hand_over(true);
      core.finish(in, in.error(), true);
      return Outcome::handed_over;
    }
    if (body.handle) [[unlikely]] {
      // A coroutine: adopted only here, so the common path has no ErasedCo to reset or
      // destroy.
      ErasedCo started(body);
      if (!ran_body_here(in, info, started)) [[unlikely]] {
        // It suspended: once resumed, it finishes the general way, after the hand-over, or
        // (resumed and completed meanwhile elsewhere) here.
        hand_over(true);
        Instance* starting = &in;
        if (!body_here_.compare_exchange_strong(starting, nullptr, std::memory_order_acq_rel))
          core.finish(in, in.error(), true);
        return Outcome::handed_over;
      }
      if (in.error()) [[unlikely]] {
        hand_over(true);
        core.finish(in, in.error(), true);
        return Outcome::handed_over;
      }
    }
  }
  if (in.stream_used) [[unlikely]] {
    hand_over(true);
    core.finish(in, std::exception_ptr(), true);  // it records its device work
    return Outcome::handed_over;
  }
  in.set_finished(sync.iter);
  finish_under_claim(info);  // released under the claim (bypassed)
  return Outcome::ran;
}

inline void UncountedRuns::complete(IterationSync& sync) noexcept {
  const bool waiter_is_here =
      core().waiting_thread_.load(std::memory_order_relaxed) == &this_thread_marker;
  sync.completed.store(sync.iter, std::memory_order_release);
  if (!waiter_is_here) core().runtime_.scheduler().notify();
}

inline bool UncountedRuns::runs_whole(const IterationSync& sync) const noexcept {
  if (core().attention_.load(std::memory_order_acquire) != 0) return false;
  if (sync.iter == core().base_) return true;
  const IterationSync& previous = *sync.previous;
  return EngineCore::complete(sync.iter - 1, previous) && !previous.device();
}

inline int UncountedRuns::waits_from(const Instance& in, std::size_t k) const noexcept {
  int waits = 0;
  for (TaskIndex d : in.info->intra)
    if (serial_position_[d] >= k) ++waits;
  return waits;
}

}  // namespace swp::detail
