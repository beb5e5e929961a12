// ClockRelease: periods release instances to their lanes; lanes keep the period order.

#include "swp/engine/detail/clock_release.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <ostream>

#include "swp/core/enqueue_order.hpp"
#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

ClockRelease::ClockRelease(EngineCore& core)
    : core_(core),
      only_driven_(core.runtime().scheduler().runs_only_when_driven()),
      order_(enqueue_order(core.graph(), OrderPolicy::ready_first)) {
  for (TaskIndex t = 0; t < core.graph().size(); ++t)
    max_stage_ = std::max(max_stage_, core.graph().stage(t));
  for (TaskIndex t : order_) {
    const int stage = core.graph().stage(t);
    if (stage == 0) {
      first_.push_back(t);
    } else {
      later_.push_back({t, stage});
    }
  }
  // A period releases the later stages first, then stage 0: where a producer is released in
  // the same period as its consumer (same stage; an inter dependency one stage later), it
  // must come first for an uncounted period (a producer in a later period rules it out).
  const PlanGraph& graph = core.graph();
  std::vector<std::size_t> position(graph.size());
  std::size_t next = 0;
  for (const Later& later : later_) position[later.task] = next++;
  for (TaskIndex t : first_) position[t] = next++;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    const int stage = graph.stage(t);
    for (TaskIndex d : graph.intra_deps(t))
      if (graph.stage(d) > stage || (graph.stage(d) == stage && position[d] > position[t]))
        period_ordered_ = false;
    for (TaskIndex d : graph.inter_deps(t))
      if (graph.stage(d) > stage + 1 || (graph.stage(d) == stage + 1 && position[d] > position[t]))
        period_ordered_ = false;
  }
}

std::unique_ptr<ReleasePolicy> make_clock_release(EngineCore& core) {
  return std::make_unique<ClockRelease>(core);
}

bool ClockRelease::retires_undriven() const noexcept {
  // With one thread, and only where its instances run as the periods release them (runs_here_).
  return only_driven_ && core_.fast_.in_place;
}

int ClockRelease::extra_degree(TaskIndex, std::int64_t) const noexcept {
  return 1;  // the start token
}

void ClockRelease::reset() {
  // The core makes its entries and slots after its policy: sized here.
  const std::size_t slots = core_.depth_;
  next_period_ = 0;
  last_admit_period_ = -1;
  // Lookups reach back S periods (the gate) and max_stage periods (releases): no aliasing.
  const std::size_t ring = std::bit_ceil(slots + static_cast<std::size_t>(max_stage_) + 1);
  period_syncs_.assign(2 * ring, nullptr);
  period_mask_ = ring - 1;
  // The counters are armed afresh for the run (and count once an instance is handed over).
  // Uncounted periods need one thread, on which the instances run where they are released
  // (runs_here_): not on virtual time, and with workers only in the alone window.
  const FastPaths& fast = core_.fast_;
  const bool uncountable = fast.uncounted && fast.in_place &&
                           !core_.runtime().scheduler().virtual_time() && period_ordered_ &&
                           core_.uncounted().applies();
  uncounted_ = uncountable && only_driven_;
  // With workers, uncounted periods while they take none of the work (watch_help).
  alone_runs_ = uncountable && !only_driven_;
  steady_need_ = core_.depth_ > 1 && max_stage_ > 0;
  admit_until_ = no_admission_bound;
  alone_.reset(core_.base_, core_.sync_ring_(core_.base_), core_.graph_.size());
  core_.retires_undriven_ = retires_undriven();
}

std::int64_t ClockRelease::iter_of_period(std::int64_t period) const noexcept {
  const IterationSync* sync = row_of(period)[0];
  return sync == nullptr ? -1 : sync->iter;
}

bool ClockRelease::can_open(std::int64_t period) const noexcept {
  const std::int64_t gate = period - static_cast<std::int64_t>(core_.depth_);
  if (gate < 0) return true;
  const std::int64_t iter = iter_of_period(gate);
  return iter < core_.oldest_;  // -1 (a bubble) included
}

bool ClockRelease::needed(std::int64_t period) const noexcept {
  // Iterations retire in order: when any is in flight, the last admitted one is.
  return core_.next_admit_ > core_.oldest_ && last_admit_period_ + max_stage_ >= period;
}

void ClockRelease::release(TaskIndex task, IterationSync& sync) {
  Instance& in = sync.instances[task];
  if (uncounted_ && release_uncounted(in) != UncountedRuns::Outcome::not_started) return;
  release_counted(in);
}

void ClockRelease::release_counted(Instance& in) {
  // With one thread, a ready instance of a task alone on its lane runs now (see InPlaceRuns::run):
  // its counter at 1 waits only for the period's token.
  if (runs_here_ != nullptr && in.info->in_place &&
      in.pending.load(std::memory_order_acquire) == 1 && core_.in_place().run<Releasing::clock>(in))
    return;
  // On its lane, the lane starts it, which gives its start token (start). Under its lane's
  // claim (see LaneClaim) the period gives it, and whoever takes the counter to
  // zero (this call, a producer, or the task's instance before, through the lane edge) posts
  // it to its thread: no lane hand-off, and a producer's thread runs it next.
  if (core_.submit(in)) start_under_claim(in);
}

template <class Task, class SyncOf>
void ClockRelease::release_each(const std::vector<Task>& tasks, SyncOf sync_of) {
  const Task* next = tasks.data();
  const Task* const end = next + tasks.size();
  if (uncounted_ && runs_here_ != nullptr) {
    while (next != end) {
      const Task& task = *next++;
      IterationSync* sync = sync_of(task);
      if (sync == nullptr) continue;
      Instance& in = sync->instances[task_of(task)];
      const UncountedRuns::Outcome outcome = run_uncounted(in, *sync);
      if (outcome == UncountedRuns::Outcome::ran) continue;
      // Handed over: the periods count from now on (count_again), this one's rest too.
      if (outcome == UncountedRuns::Outcome::not_started) release_counted(in);
      break;
    }
  }
  for (; next != end; ++next)
    if (IterationSync* sync = sync_of(*next)) release(task_of(*next), *sync);
}

UncountedRuns::Outcome ClockRelease::release_uncounted(Instance& in) noexcept {
  // Not the only runner here (called inside a runnable; virtual time): the periods count.
  if (runs_here_ == nullptr) {
    count_again(nullptr);
    return UncountedRuns::Outcome::not_started;
  }
  return run_uncounted(in, *in.sync);
}

UncountedRuns::Outcome ClockRelease::run_uncounted(Instance& in, IterationSync& sync) noexcept {
  const auto hand_over = [this, &in](bool started) { count_again(started ? &in : nullptr); };
  const TaskInfo& info = *in.info;
  const UncountedRuns::Outcome outcome =
      core_.uncounted().run(in, info, sync, *sync.slot, hand_over);
  // Only the sinks count (see TaskInfo::counts_completion; no observer: it would have
  // handed over). The only thread that finishes anything of the run: no read-modify-write.
  if (outcome == UncountedRuns::Outcome::ran && info.counts_completion) {
    const int left = sync.remaining.load(std::memory_order_relaxed) - 1;
    sync.remaining.store(left, std::memory_order_relaxed);
    if (left == 0) core_.uncounted().complete(sync);
  }
  return outcome;
}

void ClockRelease::count_again(const Instance* running) noexcept {
  uncounted_ = false;
  core_.uncounted().count_afresh(running);
  if (only_driven_) return;
  // With workers (watch_help): what is released from now on is posted, and the caller
  // retires in a driving section again. The iterations retired so far were the window's
  // (run here, and the entries of some hold later ones already): none is looked at.
  alone_.skip(core_.oldest_, core_.sync_.size());
  alone_.close();
  admit_until_ = no_admission_bound;
  runs_here_ = nullptr;
  core_.retires_undriven_ = false;
}

[[gnu::noinline]] void ClockRelease::watch_help() noexcept {
  EngineCore& c = core_;
  if (uncounted_) {
    // The window's periods ran here, uncounted, since the last call (advance() admits and
    // retires in its own loop up to admit_until_): nobody helped, and the entries of the
    // iterations retired meanwhile may hold later ones already.
    alone_.skip(c.oldest_, c.sync_.size());
    // Device work: the instances that use their streams hand over (their finish records
    // events), and the retirement waits for it; no window.
    if (c.device_used_.load(std::memory_order_relaxed)) alone_.close();
    // The window's admissions made (or closed): the next period counts.
    if (!alone_.take(c.next_admit_ - alone_from_)) return count_again(nullptr);
    alone_from_ = c.next_admit_;
    admit_until_ = alone_from_ + alone_.left();
    return;
  }
  alone_.look(c.oldest_, c.sync_);
  if (c.device_used_.load(std::memory_order_relaxed)) alone_.close();
  // Only where this thread runs the periods' instances (look_who_runs would say so).
  const RunQueueHooks& run_queue = c.run_queue();
  const bool draining =
      alone_.open() && (run_queue.runs_no_work_here() || run_queue.drives_here());
  // While the window drains the iterations in flight, the periods admit nothing.
  admit_until_ = draining ? std::numeric_limits<std::int64_t>::min() : no_admission_bound;
  // Nothing in flight: every instance released so far finished, and each one the periods
  // release from now on finds its producers finished as with one thread (reset's state).
  if (!draining || c.oldest_ != c.next_admit_) return;
  uncounted_ = true;
  alone_from_ = c.next_admit_;
  admit_until_ = alone_from_ + alone_.left();
  c.retires_undriven_ = true;  // a period's instances run as it opens: nothing to drive
}

// Flattened too: open_periods inline, in the frame of the policy's virtual call (one period
// per retirement with one thread: 186.65 -> 184.65 instructions per task on the dispatch chain).
[[gnu::flatten]] void ClockRelease::advance() {
  if (alone_runs_) watch_help();  // before look_who_runs, which it concerns
  look_who_runs();
  open_periods();
}

// Flattened: a period's releases (release, EngineCore::submit from the core's header,
// start_under_claim) run without a call each (578 -> 514 instructions per task on the
// dispatch chain, with Instance::run flattened too; docs/benchmarks.md).
[[gnu::flatten]] void ClockRelease::open_periods() {
  // Tasks of iterations already in flight go first, in the period's enqueue order; the new
  // iteration needs its slot, which may still wait for its previous occupant's device work.
  // Deferring stage-0 tasks keeps the order topological: nothing else in this period depends
  // on the new iteration.
  EngineCore& c = core_;
  c.starved_ = false;  // set again if the source answers "not yet" below
  RunQueueHooks& run_queue = c.run_queue();
  // In run()'s loop of undriven retirements (its first admissions made: begin_pending_ is
  // clear), where this thread runs the periods (one thread, or the alone window's uncounted
  // periods: runs_here_): the iteration a period completes retires in this call (below).
  const bool may_retire = c.advance_may_retire_ && runs_here_ != nullptr;
  assert(!may_retire || !c.begin_pending_);
  // The period's gate is known open: its iteration retired below, in the last round.
  bool gate_retired = false;
  for (;;) {
    const std::int64_t period = next_period_;
    if (c.failure_.failed() || (!gate_retired && !can_open(period))) return;
    // After a retirement here (below): S - 1 iterations in flight, the last one admitted in
    // the period before, and this thread runs the periods (may_retire).
    const bool in_flight_need = gate_retired ? steady_need_ : needed(period);
    if (in_flight_need) {
      if (gate_retired || runs_here_ != nullptr) {
        release_later_stages(period);  // what is ready runs now
      } else {
        // Announced to idle threads once, before the source runs (which may block).
        const RunQueueHooks::PostBatch batch(run_queue);
        release_later_stages(period);
      }
    }
    gate_retired = false;
    std::int64_t admitted = -1;
    const std::int64_t next = c.next_admit_;
    const std::size_t entry = c.admit_entry_;
    // Once the source said "not yet" in this call, bubbles do not ask it again. With workers,
    // the alone window bounds the admissions (admit_until_, watch_help).
    if (next < admit_until_ && !c.starved_ && next < c.end_ && c.await_slot() && c.admit())
      admitted = next;
    // Neither a new iteration nor a stage of one in flight: the period does not open (the
    // source has nothing yet, or the data ended and everything in flight is released).
    if (admitted < 0 && !in_flight_need) return;
    record_period(period, admitted < 0 ? nullptr : &c.sync_[entry]);
    ++next_period_;
    if (admitted < 0) continue;  // a bubble: the next period may release more
    last_admit_period_ = period;
    release_each(first_, [sync = &c.sync_[entry]](TaskIndex) { return sync; });
    // Every slot busy: the next period cannot open (can_open's answer without its look at the
    // ring; one thread opens one period per retirement). Each period q up to this one opened
    // once the iteration of period q - S retired, so the S iterations in flight came in the
    // last S periods, one each, the next period's gate the oldest of them.
    if (c.next_admit_ - c.oldest_ >= static_cast<std::int64_t>(c.depth_)) {
      // The period completed the oldest iteration (its last stage ran here; always, while the
      // periods run uncounted): it retires now, where run()'s loop would retire it right after
      // this call (RunDriver::retires_next_undriven: the same conditions), and the next period
      // opens in this call, its gate retired (one advance() per retirement cost the clock 7
      // instructions per task with one thread; docs/benchmarks.md). A retirement that fails
      // ends this call, the run failed (run()'s loop then surfaces it).
      if (!(may_retire && c.retirable() && !c.device_holds_oldest() && c.retire_oldest_only()))
        return;
      gate_retired = true;
    }
  }
}

bool ClockRelease::drained() const noexcept {
  // Every instance of an iteration in flight is released (by its period, or by release_rest
  // once the run stopped), so each iteration completes.
  for (std::int64_t iter = core_.oldest_; iter < core_.next_admit_; ++iter)
    if (!core_.complete(iter)) return false;
  return true;
}

void ClockRelease::release_later_stages(std::int64_t period) {
  // Only periods that admitted something hold an iteration (a bubble holds none). Every
  // period before this one was written in this run (see period_syncs_), and one before the
  // first (period < stage) maps to an entry no period wrote yet: no range check. Each
  // iteration in reach is still in flight, so its entry still holds it: an iteration retires
  // only once its last stage (max_stage_, which every iteration has) was released, in a period
  // no earlier than this one. (Not asserted: a look at the entry's iteration cost 2
  // instructions per task on the dispatch chain, at each release or once per period; an entry
  // of another iteration would run the wrong instances, which the engine tests' outputs show.)
  IterationSync* const* const row = row_of(period);
  release_each(later_, [row](const Later& later) { return row[-later.stage]; });
}

[[gnu::always_inline]] inline void ClockRelease::look_who_runs() noexcept {
  // detail::sole_runner_here, with the half that never changes asked once, and the
  // question the one-thread retirement answers (outside any pool's work) first: one virtual
  // call per period there (12 instructions per iteration less).
  const RunQueueHooks& run_queue = core_.run_queue();
  // With workers, only in the alone window's uncounted periods (watch_help).
  Scheduler* const here = (only_driven_ || uncounted_) && core_.fast_.in_place &&
                                  (core_.waiter_runs_no_work_ || run_queue.runs_no_work_here() ||
                                   run_queue.drives_here())
                              ? &core_.runtime().scheduler()
                              : nullptr;
  // Stored only when it changes: it shares its cache line with the policy's vtable pointer,
  // which workers read at every ready() (a store per period made them miss on it).
  if (runs_here_ != here) runs_here_ = here;
}

void ClockRelease::release_rest() {
  look_who_runs();
  // The periods that would have opened, opened now in their order: an instance still goes to
  // its lane after its producers (lanes keep the period order), so none parks for good.
  for (std::int64_t period = next_period_; period <= last_admit_period_ + max_stage_; ++period) {
    release_later_stages(period);
    record_period(period, nullptr);  // a bubble
  }
  next_period_ = std::max(next_period_, last_admit_period_ + max_stage_ + 1);
}

void ClockRelease::ready(Instance& in, bool step_ending) noexcept {
  core_.rearm(in);
  // Under its lane's claim: it goes to its thread, as the next runnable of a producer's lane
  // step that ends.
  if (in.bypassed.load(std::memory_order_relaxed)) return core_.post_claimed(in, step_ending);
  // The instance holds its lane, parked on this dependency: it goes on on its lane.
  in.info->lane->continue_job(in);
}

void ClockRelease::start(Instance& in) noexcept {
  // The start token: the dependencies may still be running (periods release an instance with
  // its producers; its lane keeps the period's order meanwhile).
  if (!core_.count_down(in)) return park(in);
  core_.rearm(in);
  core_.proceed(in);
}

void ClockRelease::start_under_claim(Instance& in) noexcept {
  // The period's token. Once given, the last producer may post the instance at once, and it
  // may run to its end before this call returns (the pipeline stays: periods open on the
  // thread that retires). So an observer hears first what it waits for, as the wait on its
  // lane it would be (a producer finishing in between makes it a wait of no length): behind
  // its instance before, it is queued on its lane; else it holds its lane, waiting for a
  // producer. Without one nothing is recorded: the hang report works the same out from the
  // states of an instance queued under its claim, and the look here would read the lines of
  // the producers' instances, which the lanes' cores hold, at every release of a period.
  // A counter at 1 waits only for this token: the instance is ready (count_down's shortcut,
  // taken here on the load this call makes anyway).
  if (in.pending.load(std::memory_order_acquire) != 1) {
    if (core_.hooks_.observer() != nullptr) {
      const std::int64_t iter = in.iter();
      const bool behind =
          iter > core_.base_ && core_.state_at(in.task(), iter - 1) != InstanceState::finished;
      if (!behind) park(in);
    }
    if (in.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  }
  core_.rearm(in);
  // With one thread (a pool without workers, and this thread outside any of its runnables) it
  // runs now, as its post would have made it run next: no queue's round trip. With one thread
  // this is every instance: a producer always finishes before its successor's period opens
  // (docs/benchmarks.md). (Compiled for the clock's release: see Releasing.)
  Scheduler& scheduler = in.info->lane->scheduler();
  if (runs_here_ == &scheduler) return core_.proceed_as<Releasing::clock>(in);
  core_.post_claimed(in, false);
}

void ClockRelease::park(Instance& in) noexcept {
  // Whoever finishes last continues the instance, after this step. Every producer may have
  // finished between the decrement and the look: the last one has already queued the
  // continuation, so there is no wait to report.
  if (const auto producer = core_.hang_report().unfinished_producer(in.task(), in.iter()))
    core_.record_dep_wait(in, producer->first, producer->second);
}

void ClockRelease::ordered_finished(Instance&) noexcept {
  // Turns are handed out in period order as instances are released: nothing to chain.
}

void ClockRelease::explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                                      bool& waits) const {
  if (waits) return;
  // The period that admitted it is still in the ring: an iteration in flight keeps the period
  // S (slots) after its own from opening, and the ring is longer.
  const auto ring = static_cast<std::int64_t>(period_mask_ + 1);
  for (std::int64_t period = next_period_ - 1; period >= 0 && next_period_ - period <= ring;
       --period)
    if (iter_of_period(period) == iter) {
      out << " (its period " << period + core_.graph().stage(task) << " has not opened)";
      return;
    }
}

}  // namespace swp::detail
