#pragma once
// EngineCore's steps that finish an instance and count down what waits for it, inline (not for
// direct use): a count-down's release (satisfy_as), a routine's call (run_routine), the
// finish (finish_as) and its count-downs (count_finished). Included by the files whose
// flattened paths inline them: engine_core.cpp (an instance's step as a runnable) and
// in_place_runs.cpp (the in-place runs); nothing else compiles them.

#include <exception>
#include <span>
#include <utility>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

inline EngineCore& InPlaceRuns::core() noexcept { return static_cast<EngineCore&>(*this); }

inline bool InPlaceRuns::chained_here(Instance& in) noexcept {
  if (!in.info->in_place) return false;
  // The marker first: only the chain's thread reads run_next_.
  if (chain_thread_.load(std::memory_order_relaxed) != &this_thread_marker) return false;
  if (run_next_ != nullptr) return false;
  run_next_ = &in;
  return true;
}

template <Releasing R>
inline void EngineCore::satisfy_as(Instance& in, bool step_ending) noexcept {
  if (!count_down(in)) return;
  if (R == Releasing::either && start_proceeds_) {
    // Data-flow: what DataFlowRelease::ready does, unless a chain on this thread runs it next.
    if (step_ending && in_place().chained_here(in)) return;
    release_now(in, step_ending);
  } else {
    ready_by_policy(in, step_ending);
  }
}

inline bool EngineCore::run_routine(Instance& in, const TaskInfo& info) noexcept {
  ReleasedCo body;
  const ContextSlot& slot = in.slot();
  if (!call_routine(in, info, in.scope(), slot.boxes[info.task].get(), slot, body)) {
    finish(in, in.error(), true);
    return false;
  }
  if (!body.handle) return true;  // completed synchronously
  ErasedCo started(body);
  start_body(in, info, started);
  return false;
}

// The count-downs of a finished instance (its state stored, its lane or claim done): its
// successors', then its iteration's completion. Inline in finish_as.
template <bool Plain, Releasing R>
[[gnu::always_inline]] inline void EngineCore::count_finished(Instance& in) noexcept {
  const std::int64_t iter = in.iter();
  Sync& sync = *in.sync;
  const TaskInfo& info = *in.info;
  // finish() ends its lane step (its callers return right after; nothing below blocks): the
  // first successor released may run next on this thread. In both engines that is one of this
  // iteration's own successors where it has any (the clock's, once its period released it),
  // not the next iteration's work (the lane's next step, an inter successor), which goes to
  // the queue: the thread carries the iteration along, as a pipeline's line is. Run the other
  // way, the iterations moved through the stages in convoys (each lane's backlog back to
  // back) and retired in bursts, while the other threads waited for the caller's retirements
  // (docs/benchmarks.md, "Occupancy"). The clock's period run in place (R == clock, one
  // thread) runs each instance as it is released: nothing runs next there.
  const bool next_iteration_runs_next = info.intra_succ.empty() || R != Releasing::either;
  if (!info.inter_succ.empty() || info.lane_edge) {
    for (TaskIndex s : info.inter_succ)
      satisfy_as<R>(in.next().instances[s], next_iteration_runs_next);
    if (info.lane_edge) satisfy_as<R>(in.after(), next_iteration_runs_next);
  }
  if (!Plain && info.ordered) release_->ordered_finished(in);
  if (!info.counts_completion && !sync.counts_all) {
    // Not a sink, under a policy that releases every instance: a sink of this iteration
    // finishes only after the count-down of this instance's last dependent, which may let the
    // caller retire the iteration and destroy the pipeline. That count-down (and the release
    // it may make) is this instance's last touch of `this`; its dependents are read first.
    const std::span<const TaskIndex> succ = info.intra_succ;
    const auto& instances = sync.instances;
    for (std::size_t k = 0; k + 1 < succ.size(); ++k) satisfy_as<R>(instances[succ[k]], true);
    satisfy_as<R>(instances[succ.back()], true);
    return;
  }
  for (TaskIndex s : info.intra_succ) satisfy_as<R>(sync.instances[s], true);
  // After the last decrement's `completed`, or after any decrement of a stopping run (whose
  // drain counts them), the caller may retire the iteration and even destroy the pipeline:
  // touch nothing of `this` afterwards (the scheduler belongs to the runtime, which outlives
  // it). Waiters are told when an iteration completes, and after a failure (the drain waits
  // for every released instance) on every finish.
  Scheduler& scheduler = runtime_.scheduler();
  // Read before the decrement: after it, `this` may be gone.
  const bool stopping = trouble();
  const bool last = !sync.counts_all && tasks_.completion_count() == 1;
  const bool waiter_is_here =
      waiting_thread_.load(std::memory_order_relaxed) == &this_thread_marker;
  // Another thread carried the iteration here (AloneWindow); before the
  // decrement, which publishes it to the caller.
  if (!waiter_is_here && !sync.helped.load(std::memory_order_relaxed))
    sync.helped.store(true, std::memory_order_relaxed);
  // seq_cst: the scheduler's contract for conditions its waiters evaluate (see notify()). The
  // only instance that counts needs no read-modify-write; `completed` is stored once, and
  // notify()'s fence orders it before the look for waiters.
  if (last || sync.remaining.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    sync.completed.store(iter, std::memory_order_release);
    if (!waiter_is_here) scheduler.notify();
  } else if (stopping) {
    scheduler.notify();
  }
}

template <bool Plain, Releasing R>
inline void EngineCore::finish_as(Instance& in, const std::exception_ptr& error,
                                  bool own) noexcept {
  const TaskInfo& info = *in.info;
  // No device point otherwise: its generation stays 0 (IterationSync::forget_recorded).
  if (in.stream_used ||
      (!Plain && (in.carries_device_work || info.ordered || error || hooks_.on()))) [[unlikely]]
    finish_guarded(in, error, own);
  in.set_state(InstanceState::finished);
  if (!in.bypassed.load(std::memory_order_relaxed)) {
    info.lane->finish_job();
  } else {
    // Ends the claim if it was revoked while this instance held the lane (its state says it
    // finished: the revoker saw it run, or sees it finished and ended the claim itself).
    finish_under_claim(in);
  }
  count_finished<Plain, R>(in);
}

}  // namespace swp::detail
