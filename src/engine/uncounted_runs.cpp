// UncountedRuns: runs without join counters, with one thread: data-flow's whole iterations
// (run_iteration) and the hand-over of one to the general path midway; the clock's uncounted
// periods' recount when they end (count_afresh); and the body start both share (run, in
// uncounted_runs_hot_path.hpp).
//
// Why data-flow's is sound. With one thread, the data-flow engine runs what an admission makes
// ready inside that admission, so the iteration before is complete when the next is admitted,
// and every instance of the new iteration waits only for its producers in the iteration:
// running the tasks in serial (topological) order runs each one after everything it waits for,
// as the counters would have released it. The counters are what the rest of the engine reads,
// so they stay exact wherever the general path could look: each instance is re-armed for its
// entry's next iteration as it starts (as EngineCore::release_now does); the count-downs it
// owes the next iteration (lane edge, inter dependencies) are made before that iteration is
// admitted the general way (pay_owed); and a hand-over midway sets the counters of what has
// not run to what the count-downs of what ran would have left (go_on_generally).

#include "swp/engine/detail/uncounted_runs.hpp"

#include <cassert>
#include <optional>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

void UncountedRuns::plan(const std::vector<TaskIndex>& serial_order,
                         std::span<const TaskInfo> info) {
  const std::size_t n = serial_order.size();
  all_in_place_ = n > 0;
  for (const TaskInfo& task : info) all_in_place_ = all_in_place_ && task.in_place;
  serial_position_.resize(n);
  completions_from_.assign(n + 1, 0);
  for (std::size_t k = n; k-- > 0;) {
    serial_position_[serial_order[k]] = k;
    completions_from_[k] =
        completions_from_[k + 1] + (info[serial_order[k]].counts_completion ? 1 : 0);
  }
}

// Flattened: each step inline, one frame for the whole iteration.
[[gnu::flatten]] bool UncountedRuns::run_iteration(
    IterationSync& sync, std::optional<RunQueueHooks::RunHere>& here) noexcept {
  const auto& instances = sync.instances;
  const std::vector<TaskIndex>& order = core().tasks_.serial_order();
  const ContextSlot& slot = *sync.slot;  // once for all its instances
  const std::size_t n = order.size();
  for (std::size_t k = 0; k < n; ++k) {
    Instance& in = instances[order[k]];
    const TaskInfo& info = *in.info;
    EngineCore::rearm(in, info);  // for its entry's next iteration, as release_now would
    const auto hand_over = [&](bool started) { go_on_generally(sync, k, started, here); };
    if (run(in, info, sync, slot, hand_over) != Outcome::ran) [[unlikely]]
      return false;
  }
  // Nobody counted `remaining`, which the next admission of the entry resets.
  complete(sync);
  return true;
}

bool UncountedRuns::ran_body_here(Instance& in, const TaskInfo& info, ErasedCo& body) noexcept {
  body_here_.store(&in, std::memory_order_relaxed);
  core().start_body(in, info, body);
  // acquire: the completion's error, when it completed (here, or meanwhile elsewhere).
  return body_here_.load(std::memory_order_acquire) != &in;
}

void UncountedRuns::go_on_generally(IterationSync& sync, std::size_t k, bool started,
                                    std::optional<RunQueueHooks::RunHere>& here) noexcept {
  // What is released from now on is kept and runs as the admission ends (as an admission's
  // releases do with one thread), not before this returns.
  here.emplace(core().run_queue_);
  count_down_next(sync, k);
  // An instance after k waits for its producers at k and after; the admission (its token)
  // happened, and the iteration before completed (runs_whole). The counters first, then the
  // releases (a release submits; nothing it submits runs before `here` ends).
  const std::size_t first = started ? k + 1 : k;
  set_counters_from(sync, k, first);
  release_unblocked_from(sync, k, first);
}

void UncountedRuns::set_counters_from(IterationSync& sync, std::size_t k,
                                      std::size_t first) noexcept {
  // The sinks at k and after have not finished (the one at k, if any, is finishing).
  sync.remaining.store(completions_from_[k], std::memory_order_relaxed);
  const auto& instances = sync.instances;
  const std::vector<TaskIndex>& order = core().tasks_.serial_order();
  for (std::size_t v = first; v < order.size(); ++v) {
    Instance& in = instances[order[v]];
    in.pending.store(waits_from(in, k), std::memory_order_relaxed);
  }
}

void UncountedRuns::release_unblocked_from(IterationSync& sync, std::size_t k,
                                           std::size_t first) noexcept {
  // Decided from the plan, not from the counters: a released instance may run at once and
  // count others down to zero, which it then releases itself. The iteration cannot complete
  // meanwhile (the instance at k, or its count-downs, are still to come).
  const auto& instances = sync.instances;
  const std::vector<TaskIndex>& order = core().tasks_.serial_order();
  for (std::size_t v = first; v < order.size(); ++v) {
    Instance& in = instances[order[v]];
    if (waits_from(in, k) == 0) core().release_now(in, false);
  }
}

void UncountedRuns::count_down_next(IterationSync& sync, std::size_t upto) noexcept {
  const auto& instances = sync.instances;
  const std::vector<TaskIndex>& order = core().tasks_.serial_order();
  for (std::size_t u = 0; u < upto; ++u) {
    const Instance& in = instances[order[u]];
    const TaskInfo& info = *in.info;
    for (TaskIndex s : info.inter_succ) {
      [[maybe_unused]] const bool last = core().count_down(in.next().instances[s]);
      assert(!last);
    }
    if (info.lane_edge) {
      [[maybe_unused]] const bool last = core().count_down(in.after());
      assert(!last);
    }
  }
}

int UncountedRuns::afresh_count(const Instance& in, std::int64_t iter, bool admitted,
                                const Instance* running) const noexcept {
  // `running` counts as unfinished whatever its state says (it was handed over started, and
  // its general finish counts down its successors).
  const std::int64_t oldest = core().oldest_;
  const auto finished = [oldest, running](const Instance& producer, std::int64_t at) {
    return &producer != running &&
           (at < oldest || producer.state_in(at) == InstanceState::finished);
  };
  const IterationSync& sync = core().sync_of(iter);
  const TaskInfo& info = *in.info;
  int waits = core().release_->extra_degree(in.task(), iter);  // the clock's start token
  for (TaskIndex d : info.intra)
    if (!admitted || !finished(sync.instances[d], iter)) ++waits;
  if (iter > core().base_) {
    const IterationSync& previous = core().sync_of(iter - 1);
    for (TaskIndex d : info.inter)
      if (!finished(previous.instances[d], iter - 1)) ++waits;
    if (info.lane_edge && !finished(previous.instances[in.task()], iter - 1)) ++waits;
  }
  return waits;
}

void UncountedRuns::count_afresh(const Instance* running) noexcept {
  // Entries nobody uses yet (and instances finished, or running): re-armed.
  for (IterationSync& sync : core().sync_)
    for (Instance& in : sync.instances) core().rearm(in);
  // The iterations in flight, and the next one (its entry is free: at most depth are in
  // flight, in depth + 1 entries), whose instances the lane edges and inter dependencies of
  // the last one in flight count down before it is admitted.
  for (std::int64_t iter = core().oldest_; iter <= core().next_admit_; ++iter) {
    const IterationSync& sync = core().sync_of(iter);
    const bool admitted = iter < core().next_admit_;
    for (Instance& in : sync.instances) {
      if (admitted && (&in == running || in.state_in(iter) == InstanceState::finished)) continue;
      in.pending.store(afresh_count(in, iter, admitted, running), std::memory_order_relaxed);
    }
  }
}

}  // namespace swp::detail
