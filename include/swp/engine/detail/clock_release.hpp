#pragma once
// ClockRelease: the clock engine's release policy — each retirement opens a period, which
// releases (task, period − stage) for every task, in the plan's ready-first order.

#include <cstdint>
#include <limits>
#include <vector>

#include "swp/async/scheduler.hpp"
#include "swp/engine/detail/alone_window.hpp"
#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/detail/uncounted_runs.hpp"

namespace swp::detail {

struct IterationSync;

/// Lanes receive instances in period order; an instance whose producers still run when its
/// lane starts it parks there (holding the lane, as the seed's thread group would). Its counter
/// counts its dependencies plus a start token the instance gives when its lane starts it;
/// whoever takes it to zero continues it on its lane. A task alone on its lane whose lane the
/// run claimed (LaneClaim) has no lane hand-off: its counter also counts the finish
/// of its instance before (the lane edge), the period gives the start token, and whoever takes
/// the counter to zero posts the instance to its thread. Tasks of iterations in flight go first
/// in a period; the new iteration's stage-0 tasks follow once its slot is free.
class ClockRelease final : public ReleasePolicy {
 public:
  explicit ClockRelease(EngineCore& core);

  [[nodiscard]] int extra_degree(TaskIndex task, std::int64_t iter) const noexcept override;
  void reset() override;
  void advance() override;
  [[nodiscard]] bool drained() const noexcept override;
  void ready(Instance& in, bool step_ending) noexcept override;
  void start(Instance& in) noexcept override;
  void ordered_finished(Instance& in) noexcept override;
  [[nodiscard]] bool releases_every_instance() const noexcept override { return true; }
  // With one thread (a pool without workers) a period's ready instances run where they are
  // released, driving or not.
  [[nodiscard]] bool retires_undriven() const noexcept override;
  // The periods the stopped run will not open, released at once (in period order).
  void release_rest() override;
  void explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                          bool& waits) const override;

 private:
  // Period p may open: the iteration admitted S periods before (S = slots) retired, or that
  // period admitted none.
  [[nodiscard]] bool can_open(std::int64_t period) const noexcept;
  // Some iteration in flight still has a stage to release in `period`.
  [[nodiscard]] bool needed(std::int64_t period) const noexcept;
  // Releases `task`'s instance in the iteration `sync` holds.
  void release(TaskIndex task, IterationSync& sync);
  // release() once the periods count: in place where it is ready with one thread, else to its
  // lane, or under its lane's claim.
  void release_counted(Instance& in);
  // Releases each of `tasks` (TaskIndex or Later) in order, in the iteration `sync_of(task)`
  // names (nullptr: none this period). While the periods run uncounted here, one look at
  // uncounted_ and runs_here_ serves them all (only a hand-over changes them, count_again:
  // the rest then go the general way), where release() would read both again after each body.
  template <class Task, class SyncOf>
  void release_each(const std::vector<Task>& tasks, SyncOf sync_of);
  // An uncounted period's release (see uncounted_): not_started when the instance did not
  // start and the periods count again (the caller releases it the general way).
  UncountedRuns::Outcome release_uncounted(Instance& in) noexcept;
  // release_uncounted where this thread is known to run the periods (runs_here_); `sync`:
  // the entry of `in`, which the caller has at hand.
  UncountedRuns::Outcome run_uncounted(Instance& in, IterationSync& sync) noexcept;
  // The periods count again from now on in this run: every counter set to what counting
  // would have left (UncountedRuns::count_afresh; `running`: the instance handed over, started).
  // With workers the window ends: they are offered the work again.
  void count_again(const Instance* running) noexcept;
  // With workers (advance, before look_who_runs): looks at the iterations retired since the
  // last call (AloneWindow); once the window opened, drains the iterations in flight
  // (admit_until_), then makes the periods uncounted; once its admissions are made, counts
  // again.
  void watch_help() noexcept;
  // Releases (task, period − stage) of every task of a later stage whose iteration is in
  // flight (period's releases of iterations already admitted).
  void release_later_stages(std::int64_t period);
  // Names a producer of `in` that had not finished when it parked (diagnosis, traces).
  void park(Instance& in) noexcept;
  // The period's start token for `in`, released under its lane's claim (EngineCore::submit
  // said it bypasses its lane): posts it if that was the last thing it waited for.
  void start_under_claim(Instance& in) noexcept;

  // Sets runs_here_; called first by advance() and release_rest(), the only callers of
  // release().
  void look_who_runs() noexcept;
  // advance() past look_who_runs: opens the periods that may open (flattened).
  void open_periods();

  EngineCore& core_;
  // The runtime's scheduler runs only when driven (a pool without workers; it has them or not
  // for its whole life): a thread that drives it is its only runner.
  bool only_driven_;
  // The runtime's scheduler when this thread is its only runner (detail::sole_runner_here),
  // so a released instance that is ready runs at once instead of being posted; else nullptr.
  Scheduler* runs_here_ = nullptr;
  std::vector<TaskIndex> order_;  // per-period enqueue order (ready-first)
  // order_ split: the stage-0 tasks (released with their iteration's admission), and the
  // others with their stage (released by the periods after it), each in order_'s order.
  struct Later {
    TaskIndex task;
    int stage;
  };
  std::vector<TaskIndex> first_;
  std::vector<Later> later_;
  static TaskIndex task_of(TaskIndex task) noexcept { return task; }
  static TaskIndex task_of(const Later& later) noexcept { return later.task; }
  // Periods and iterations part ways when the source answers "not yet": a period then opens
  // without admitting (a bubble) if an iteration in flight needs its later stages released,
  // and an iteration admitted at period a has its stage-k tasks released at period a + k.
  // Ring (a power of two long, R = period_mask_ + 1): the sync entry of the iteration period p
  // admitted (nullptr: none), so a release finds its instance without the ring arithmetic
  // from the iteration to its entry. Kept twice, at p mod R and p mod R + R: a period's row
  // (row_of) looks back up to R periods by a negative index, with no wrap of its own (the
  // clock's releases: one look back per task of a later stage). Cleared by reset; every
  // period is written as it opens (release_rest's too), so a look back from the period
  // opening finds what that period admitted, and one before period 0 an entry no period
  // wrote yet (the ring is longer than the look back plus one). The entry still holds the
  // iteration for every look back made: the releases' (the iteration is in flight) and the
  // gate's, S periods (can_open: fewer than S admissions since, the entries are S + 1).
  std::vector<IterationSync*> period_syncs_;  // 2R
  std::size_t period_mask_ = 0;
  // row_of(p)[-k]: the entry period p - k admitted (0 <= k <= R).
  [[nodiscard]] IterationSync* const* row_of(std::int64_t period) const noexcept {
    return period_syncs_.data() + (static_cast<std::size_t>(period) & period_mask_) +
           period_mask_ + 1;
  }
  // The iteration period p admitted, -1 for none, while its entry holds it (above).
  [[nodiscard]] std::int64_t iter_of_period(std::int64_t period) const noexcept;
  void record_period(std::int64_t period, IterationSync* sync) noexcept {
    const std::size_t k = static_cast<std::size_t>(period) & period_mask_;
    period_syncs_[k] = sync;
    period_syncs_[k + period_mask_ + 1] = sync;
  }
  // Uncounted periods: with one thread and every task in place (UncountedRuns::applies),
  // each instance a period releases is ready (its producers were released before it, in an
  // earlier period or earlier in this one, and ran where they were released), so it runs
  // where it is released without its join counter (UncountedRuns::run), and nothing
  // counts anything down. Until something unusual hands an instance over to the general path
  // (count_again); the run counts from then on. Possible when the plan's releases within a
  // period come after the producers released in the same period (period_ordered_).
  bool period_ordered_ = true;
  bool uncounted_ = false;
  // With workers that take next to none of its short tasks, the caller runs the periods
  // uncounted for a while, as with one thread (AloneWindow): once the window opened, the
  // periods admit nothing until the iterations in flight retired — each released instance
  // must find its producers finished — then admit uncounted until the window's admissions
  // are made, and count again (watch_help, count_again). `alone_runs_`: the run may (the
  // conditions of uncounted_ but one thread); `alone_from_`: the next admission when the
  // window's admissions were counted last; `admit_until_`: the periods admit iterations
  // below it only (none while the window drains; the window's last admission + 1 while its
  // periods run uncounted, which then retire in advance()'s loop, as with one thread).
  static constexpr std::int64_t no_admission_bound = std::numeric_limits<std::int64_t>::max();
  bool alone_runs_ = false;
  std::int64_t admit_until_ = no_admission_bound;
  std::int64_t alone_from_ = 0;
  AloneWindow alone_;
  // needed() of a period that opens once the one before retired the oldest of S iterations
  // in flight (open_periods): S - 1 are left, the last admitted by the period before.
  bool steady_need_ = false;
  std::int64_t next_period_ = 0;
  std::int64_t last_admit_period_ = -1;
  int max_stage_ = 0;
};

}  // namespace swp::detail
