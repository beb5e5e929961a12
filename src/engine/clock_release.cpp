// ClockRelease: periods release instances to their lanes; lanes keep the period order.

#include "swp/engine/detail/clock_release.hpp"

#include <ostream>

#include "swp/core/enqueue_order.hpp"
#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

ClockRelease::ClockRelease(EngineCore& core)
    : core_(core),
      order_(enqueue_order(core.graph(), OrderPolicy::ready_first)) {}

std::unique_ptr<ReleasePolicy> ClockRelease::make(EngineCore& core) {
  return std::make_unique<ClockRelease>(core);
}

int ClockRelease::extra_degree(TaskIndex, std::int64_t) const noexcept {
  return 1;  // the start token
}

void ClockRelease::fill() {
  next_period_ = 0;
  released_.assign(core_.sync_.size(), 0);  // the core makes its entries after its policy
  // A source that fails for one of the first batches stops the run: no period opens after it.
  for (std::size_t p = 0; p < core_.slots_.size() && !core_.stop_.stop_requested(); ++p)
    open_period(next_period_++);
}

void ClockRelease::retired() { open_period(next_period_++); }

void ClockRelease::release(TaskIndex task, std::int64_t iter) {
  Instance& in = *core_.sync_of(iter).instances[task];
  core_.assign_turn(in);
  ++released_[in.entry];
  core_.submit(in);
}

void ClockRelease::open_period(std::int64_t period) {
  // Tasks of iterations already in flight go first, in the period's enqueue order; the new
  // iteration needs its slot, which may still wait for its previous occupant's device work.
  // Deferring stage-0 tasks keeps the order topological: nothing else in this period depends
  // on the new iteration.
  EngineCore& c = core_;
  const PlanGraph& graph = c.graph();
  for (TaskIndex t : order_) {
    const std::int64_t iter = period - graph.stage(t);
    if (iter >= c.oldest_ && iter < period && iter < c.next_admit_) release(t, iter);
  }
  if (period >= c.end_ || period != c.next_admit_) return;
  if (!c.await_slot(period) || !c.admit(period)) return;
  released_[static_cast<std::size_t>(period) % released_.size()] = 0;
  for (TaskIndex t : order_)
    if (graph.stage(t) == 0) release(t, period);
}

bool ClockRelease::drained() const noexcept {
  // Periods release an iteration's instances over several retirements: drained when every
  // released one finished.
  const int n = static_cast<int>(core_.graph().size());
  for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter) {
    const auto entry = static_cast<std::size_t>(iter) % released_.size();
    // A whole iteration is drained once its last finisher let go (`completed`).
    if (released_[entry] == n ? !core_.complete(iter)
                              : n - core_.sync_of(iter).remaining.load(std::memory_order_seq_cst) !=
                                    released_[entry])
      return false;
  }
  return true;
}

void ClockRelease::ready(Instance& in, bool) noexcept {
  // The instance holds its lane, parked on this dependency: it goes on on its lane.
  core_.rearm(in);
  core_.info_[in.task].lane->continue_job(in);
}

void ClockRelease::start(Instance& in) noexcept {
  // The start token: the dependencies may still be running (periods release an instance with
  // its producers; its lane keeps the period's order meanwhile).
  if (!core_.count_down(in)) return park(in);
  core_.rearm(in);
  core_.proceed(in);
}

void ClockRelease::park(Instance& in) noexcept {
  // Whoever finishes last continues the instance through its lane, after this step.
  const PlanGraph& graph = core_.graph();
  const auto finished = [&](TaskIndex d, std::int64_t iter) {
    return core_.sync_of(iter).instances[d]->state_in(iter) == InstanceState::finished;
  };
  for (TaskIndex d : graph.intra_deps(in.task))
    if (!finished(d, in.iter())) return core_.record_dep_wait(in, d, in.iter());
  if (in.iter() > 0)
    for (TaskIndex d : graph.inter_deps(in.task))
      if (!finished(d, in.iter() - 1)) return core_.record_dep_wait(in, d, in.iter() - 1);
  // Every producer finished between the decrement and the look: the last one has already
  // queued the continuation, so there is no wait to report.
}

void ClockRelease::ordered_finished(Instance&) noexcept {
  // Turns are handed out in period order as instances are released: nothing to chain.
}

void ClockRelease::explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                                      bool& waits) const {
  if (!waits) out << " (its period " << iter + core_.graph().stage(task) << " has not opened)";
}

}  // namespace swp::detail
