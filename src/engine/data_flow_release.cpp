// DataFlowRelease: instances go to their lanes as soon as their counters reach zero.

#include "swp/engine/detail/data_flow_release.hpp"

#include <optional>
#include <ostream>
#include <utility>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

DataFlowRelease::DataFlowRelease(EngineCore& core)
    : core_(core),
      only_driven_(core.runtime().scheduler().runs_only_when_driven()),
      rank_(core.graph().size(), -1) {
  for (TaskIndex t : core.serial_order()) {
    if (!core.tasks_[t].ordered) continue;
    rank_[t] = static_cast<int>(ordered_.size());
    ordered_.push_back(t);
  }
  // The admission is a count of the join counter only where the counter could otherwise reach
  // zero before its iteration is admitted: an instance without producers in its own iteration
  // that is counted down by the previous iteration (inter dependencies, the lane edge) or by
  // the ordered chain. An instance with producers in its own iteration cannot be released
  // before they ran, which is after the admission (their count-downs also publish the
  // admission's writes to it), so its counter needs no token, whatever else counts it down
  // early (one atomic read-modify-write per instance less); one that has no producers at all
  // is released by the admission itself.
  admission_.resize(core.graph().size());
  for (TaskIndex t = 0; t < core.graph().size(); ++t) {
    const auto& info = core.tasks_[t];
    if (!info.intra.empty()) {
      admission_[t] = Admission::none;
    } else if (!info.inter.empty() || info.lane_edge || rank_[t] >= 0) {
      admission_[t] = Admission::token;
      admitted_.push_back(t);
    } else {
      admission_[t] = Admission::release;
      admitted_.push_back(t);
    }
  }
}

std::unique_ptr<ReleasePolicy> make_data_flow_release(EngineCore& core) {
  return std::make_unique<DataFlowRelease>(core);
}

bool DataFlowRelease::retires_undriven() const noexcept {
  // With one thread, and only where an admission runs what it makes ready (FastPaths::in_place).
  return only_driven_ && core_.fast_.in_place;
}

void DataFlowRelease::reset() {
  whole_capable_ = core_.fast_.uncounted && core_.uncounted().applies();
  core_.retires_undriven_ = retires_undriven();
  next_owed_ = false;  // the counters are armed afresh
  alone_.reset(core_.base_, core_.sync_ring_(core_.base_), core_.graph_.size());
}

int DataFlowRelease::extra_degree(TaskIndex task, std::int64_t iter) const noexcept {
  // The admission of its iteration where it needs one (see the constructor); for an ordered
  // task also the ordered instance before it, except for the very first one.
  return (admission_[task] == Admission::token ? 1 : 0) +
         (rank_[task] >= 0 && (iter > 0 || rank_[task] > 0) ? 1 : 0);
}

void DataFlowRelease::advance() {
  EngineCore& c = core_;
  const auto slots = static_cast<std::int64_t>(c.depth_);
  c.starved_ = false;  // set again if the source answers "not yet" below
  // With one thread, what an admission makes ready runs as the admission ends, on this
  // thread (below) — until the run's tasks use their streams: then it waits for the thread's
  // next drive, which is mostly a wait for the device, so the submissions come while the
  // streams are busy (run at once, they met idle stream threads: twice the futex calls and
  // 1.3-1.5x the time per task on the dispatch chain with host streams, docs/benchmarks.md).
  // Its posts then need a driving section to go to: no undriven retirement either.
  // With workers that take none of the work (alone_), the caller runs whole iterations
  // (below) as it retires them, undriven too, until the workers are offered work again.
  if (!only_driven_ && whole_capable_) {
    alone_.look(c.oldest_, c.sync_);
    c.retires_undriven_ = alone_.open();
  }
  if (c.retires_undriven_ && c.device_used_.load(std::memory_order_relaxed))
    c.retires_undriven_ = false;
  const bool run_here = c.retires_undriven_;
  // This thread the only runner (run_here: a pool without workers, or one whose workers took
  // none of the work lately; outside its runnables): whole iterations may run in place
  // (UncountedRuns::run_iteration).
  RunQueueHooks& run_queue = c.run_queue();
  bool whole = run_here && whole_capable_ &&
               (c.waiter_runs_no_work_ || run_queue.runs_no_work_here() || run_queue.drives_here());
  // With workers: the iterations in flight complete first (the caller runs them), then each
  // next one runs whole as it is admitted (only while one is in flight: the drive goes on).
  const bool drain_first = whole && !only_driven_;
  for (;;) {
    const std::int64_t iter = c.next_admit_;
    if (c.failure_.failed() || iter - c.oldest_ >= slots || iter >= c.end_)
      break;
    // (The entry before the one this admission takes holds iteration iter - 1: no ring
    // arithmetic per admission.)
    if (drain_first && iter > c.base_ && !c.complete(iter - 1, *c.sync_[c.admit_entry_].previous))
      break;
    if (!c.await_slot()) return;
    // The user's source runs before the admission tokens: the entry being prepared is
    // invisible to the lanes until then.
    if (!c.prepare()) break;
    EngineCore::Sync& sync = c.sync_[c.admit_entry_];
    const auto& instances = sync.instances;
    c.count_admitted();
    // In place: run as the scope ends, before the next source call (which may block): no
    // queue's round trip, and no drive needed to run it (docs/benchmarks.md). Where this
    // thread is not the only runner after all (inside a runnable), the scope changes nothing.
    std::optional<RunQueueHooks::RunHere> here;
    if (whole && c.uncounted().runs_whole(sync)) {
      if (!only_driven_ && !alone_.take(1)) whole = c.retires_undriven_ = false;
      next_owed_ = c.uncounted().run_iteration(sync, here);
      continue;
    }
    // The iteration before ran whole in place: the count-downs it owes this one come first.
    if (std::exchange(next_owed_, false)) c.uncounted().pay_owed(*sync.previous);
    if (run_here) here.emplace(run_queue);
    // This thread is the only runner until the scope ends: what the admission makes ready
    // runs in place at once, with what its finishes make ready after it (InPlaceRuns::run_chain).
    const bool chain = here && here->open();
    for (TaskIndex t : admitted_) {
      Instance& in = instances[t];
      if (admission_[t] == Admission::token && !c.count_down(in)) continue;
      if (chain && in.info->in_place) {
        c.in_place().run_chain(in);
      } else {
        c.release_now(in, false);
      }
    }
  }
}

bool DataFlowRelease::drained() const noexcept {
  // Every instance of an admitted iteration is released sooner or later (after a failure too:
  // a failed or cancelled instance still counts down its successors, which then finish without
  // running their bodies), so each count must reach zero.
  for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter)
    if (!core_.complete(iter)) return false;
  return true;
}

void DataFlowRelease::ready(Instance& in, bool step_ending) noexcept {
  // Everything it waits for happened. Ordered instances are released one after the other
  // (each after the one before finished), so the turn is free when it starts. The core's
  // satisfy() calls release_now directly (start_proceeds).
  core_.release_now(in, step_ending);
}

void DataFlowRelease::start(Instance& in) noexcept { core_.proceed(in); }

Instance& DataFlowRelease::next_ordered(const Instance& in) const noexcept {
  const auto rank = static_cast<std::size_t>(rank_[in.task()]);
  if (rank + 1 < ordered_.size()) return core_.sibling(in, ordered_[rank + 1]);
  return core_.sync_of(in.iter() + 1).instances[ordered_.front()];
}

void DataFlowRelease::ordered_finished(Instance& in) noexcept {
  // The (iteration, rank) chain is an edge like a dependency, on finish: released any earlier,
  // the next ordered instance could take a lane that an instance with an earlier turn is
  // queued on, and wait there for that turn forever.
  core_.satisfy(next_ordered(in));
}

void DataFlowRelease::explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                                         bool& waits) const {
  // An ordered instance also waits for the ordered one before it.
  if (rank_[task] < 0) return;
  const auto rank = static_cast<std::size_t>(rank_[task]);
  const TaskIndex before = rank > 0 ? ordered_[rank - 1] : ordered_.back();
  const std::int64_t before_iter = rank > 0 ? iter : iter - 1;
  if (before_iter < 0 || core_.state_at(before, before_iter) == InstanceState::finished) return;
  out << (waits ? ", " : ": waits for ") << core_.graph().name(before) << " (iter " << before_iter
      << ", globally ordered before it)";
  waits = true;
}

}  // namespace swp::detail
