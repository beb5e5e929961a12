#pragma once
// EngineCore's hot paths, inline (not for direct use; included by engine_core.hpp): a count-down,
// the release of an instance (submit), a routine's call (call_routine), an admission (prepare,
// admit), a retirement (retire_oldest) and the release of a retired iteration's slot. In a
// header so that the release policies' flattened paths, compiled in their own files, inline
// them. The uncounted runs' follow (uncounted_runs_hot_path.hpp).

#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

// No error, as a named object: a `nullptr` argument would make a temporary that outlives the
// call (an instance's finish could not be a tail call; a retirement would construct and
// destroy one per iteration).
inline const std::exception_ptr no_error;

// On the hot path of every count-down.
inline bool EngineCore::count_down(Instance& in) noexcept {
  // acq_rel: every decrement publishes what its thread wrote before (the producer's outcome
  // and event generation, the admission's fields); the last one acquires them all. A
  // counter found at 1 waits only for this call (the others all counted, and the acquire
  // load sees their writes as the last decrement would): nobody else touches it until it is
  // re-armed, so no read-modify-write (a counter of one event, whose counter is never
  // decremented; the clock's start token, usually given after its producers finished; the
  // last of several producers). The load is the whole test: asking the task first whether
  // its counter counts one event cost more than the read-modify-writes it saved.
  return in.pending.load(std::memory_order_acquire) == 1 ||
         in.pending.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

// In the header: the driver's loops (RunDriver) inline it, once per iteration.
[[gnu::always_inline]] inline std::int64_t EngineCore::retire_oldest() {
  const std::int64_t retired_iter = oldest_;
  if (!retire_oldest_only()) return -1;
  release_->advance();
  return retired_iter;
}

[[gnu::always_inline]] inline bool EngineCore::retire_oldest_only() {
  // The run may have failed since the caller last looked (its failing instance completes the
  // iteration right after fail(), whose stores a completion seen by the caller makes
  // visible): an iteration of a failed run never retires, it is reported by the abort.
  if (failure_.failed()) return false;
  const std::int64_t retired_iter = oldest_;
  // The iterations retired before (their Retired handles end here); device work of theirs
  // that faulted fails the run instead.
  if (release_retired(retired_iter)) return false;
  // Retiring after the device work: work of this one that faulted fails the run instead.
  if (retire_after_device_ && fail_on_device_fault(retired_iter)) return false;
  // Failed under FailurePolicy::skip, or not (no exception_ptr made or destroyed then).
  const TaskIndex failed = sync_[oldest_entry_].failed_task.load(std::memory_order_acquire);
  try {
    // Its slot (see entry_after).
    if (failed == Sync::no_failure) [[likely]] {
      front_.retire(retired_iter, oldest_entry_, no_error);
    } else {
      front_.retire(retired_iter, oldest_entry_, task_error(retired_iter, failed));
    }
  } catch (...) {
    // Its callback had it: the abort that follows does not report it again.
    count_retired();
    fail_callback(failed == Sync::no_failure ? CallbackError::Callback::on_retire
                                             : CallbackError::Callback::on_failure,
                  retired_iter);
    return false;
  }
  count_retired();
  return true;
}

// In the header: each retirement (retire_oldest) inlines it.
[[gnu::always_inline]] inline bool EngineCore::release_retired(std::int64_t below) noexcept {
  // Iteration j still owns its slot (and sync entry) while no later admission took them.
  std::int64_t j = released_upto_;
  std::size_t e = released_entry_;
  if (const std::int64_t taken = next_admit_ - static_cast<std::int64_t>(sync_ring_.size());
      j < taken) [[unlikely]] {
    j = taken;
    e = sync_ring_(j);
  }
  if (j >= below) return false;
  bool faulted = false;
  // The entries (and slots) of the iterations after j follow j's.
  for (; j < below; ++j, e = entry_after(e)) {
    // A host-only iteration (every iteration of most plans) costs one load here.
    if (sync_[e].device()) [[unlikely]] {
      const DeviceRelease device = device_release(*this, j);
      if (device == DeviceRelease::running) break;
      faulted = device == DeviceRelease::faulted;
    }
    release_slot(e);
    if (faulted) {
      ++j;
      e = entry_after(e);
      break;
    }
  }
  released_upto_ = j;
  released_entry_ = e;
  return faulted;
}

// Once per released iteration (release_retired).
[[gnu::always_inline]] inline void EngineCore::release_slot(std::size_t s) noexcept {
  ContextSlot& slot = slots_[s];
  for (TaskIndex t : slot.boxed) slot.boxes[t]->reset();
  front_.release(s);
}

// In the header, with release_under_claim (lane_claim.hpp): the release policies' hot paths
// (the clock's period releases) inline it from their own files.
inline bool EngineCore::submit(Instance& in, bool step_ending) noexcept {
  // Nothing of the core is read once the instance went: a data-flow instance may complete the
  // last iteration and the pipeline be destroyed before this returns (the release of a
  // successor is its producer's last touch of the core).
  const TaskInfo& info = *in.info;
  Lane& lane = *info.lane;
  bool bypass = false;
  if (info.claim == nullptr) {
    assign_turn(in);  // only a task with no lane edge can be globally ordered
    in.set_state(InstanceState::queued);
  } else {
    bypass = release_under_claim(in);
  }
  // The clock releases an instance with its period, before it is ready: under its lane's claim
  // it goes to its thread once its counter reaches zero (ClockRelease::release, ready).
  const bool post = bypass && start_proceeds_;
  if (hooks_.observer() != nullptr) {
    hooks_.released(in, lane, [&] {
      if (!bypass) {
        lane.submit(in);
      } else if (post) {
        lane.scheduler().post(in);
      }
    });
  } else if (!bypass) {
    if (step_ending) {
      lane.submit_next(in);
    } else {
      lane.submit(in);
    }
  } else if (post) {
    post_claimed(in, lane.scheduler(), step_ending);
  }
  return bypass;
}

// In the header: the uncounted runs of both engines (UncountedRuns::run) inline it.
[[gnu::always_inline]] inline bool EngineCore::call_routine(Instance& in, const TaskInfo& info,
                                                            TaskScope& scope, OutputBox* box,
                                                            const ContextSlot& slot,
                                                            ReleasedCo& body) noexcept {
  try {
    body = info.routine->run(slot.context, scope, box);
  } catch (...) {
    in.error() = std::current_exception();
    return false;
  }
  // The error goes to the instance inside the handler and finish() comes after it, so this
  // thread holds no reference to the exception once finish() let the iteration complete.
  // Otherwise (the handler's end, or a local exception_ptr) it may drop the last reference
  // after the caller read the error and everybody else let go (this thread descheduled
  // meanwhile), and free the exception inside libsupc++, whose reference count
  // ThreadSanitizer cannot see: a false race report against the caller's read.
  return true;
}

inline bool EngineCore::admit() {
  if (!prepare()) return false;
  count_admitted();
  return true;
}

// In the header: the release policies' admissions (once per iteration) inline it.
[[gnu::always_inline]] inline bool EngineCore::prepare() {
  const std::int64_t iter = next_admit_;
  if (iter >= end_ || failure_.failed()) return false;
  const std::size_t s = admit_entry_;  // its slot (see entry_after)
  Admission admission = Admission::end;
  try {
    admission = front_.admit(iter, base_, s);
  } catch (...) {
    // The run fails (and surfaces it from the call that is in progress, or the next one);
    // iteration iter was not admitted, so nothing of it runs or retires.
    fail_callback(CallbackError::Callback::source, iter);
    return false;
  }
  if (admission == Admission::pending) {
    starved_ = true;  // the driver admits it once the source answers (admissible())
    return false;
  }
  if (admission == Admission::end) {
    end_ = iter;
    return false;
  }
  ContextSlot& slot = slots_[s];
  for (TaskIndex t : slot.boxed) slot.boxes[t]->reset();
  Sync& sync = sync_[admit_entry_];
  // Its instances are idle in the new iteration by their state's stamp; the rest of an
  // instance's per-iteration state is reset by the instance as it starts (proceed): nobody
  // reads it before. The admission touches no instance.
  sync.iter = iter;
  sync.slot = &slot;
  sync.forget_recorded();
  sync.helped.store(false, std::memory_order_relaxed);
  sync.failed_task.store(Sync::no_failure, std::memory_order_relaxed);
  // Published by the admission decrements (data-flow) or the lane submissions (clock), both
  // of which order these writes before the instances run.
  sync.counts_all = hooks_.observer() != nullptr;
  sync.remaining.store(
      sync.counts_all ? static_cast<int>(graph_.size()) : tasks_.completion_count(),
      std::memory_order_relaxed);
  return true;
}

}  // namespace swp::detail

#include "swp/engine/detail/iteration_device_work_hot_path.hpp"
#include "swp/engine/detail/uncounted_runs_hot_path.hpp"
