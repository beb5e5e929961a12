#pragma once
// UncountedRuns: the engines' runs without join counters, on one thread (FastPaths::uncounted;
// not for direct use).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "swp/async/detail/erased_co.hpp"
#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/context_slot.hpp"
#include "swp/engine/detail/instance.hpp"

namespace swp::detail {

class EngineCore;

/// The uncounted fast path of both engines. When every task is alone on its lane and one
/// thread runs them all (the scheduler's only runner), each instance is ready once its
/// producers ran, so the tasks can run one after the other in serial (topological) order with
/// no join counter counted down, no hand-off and no queue: data-flow runs each admitted
/// iteration whole (run_iteration), the clock its periods (ClockRelease, instance by instance
/// through run). The counters are what the rest of the engine reads, so this keeps them exact
/// wherever the reference path could look (uncounted_runs.cpp says why that is sound), and
/// anything unusual — trouble, a revoked lane claim, a body that throws, suspends or uses its
/// stream — hands the rest to the reference path with the counters it would have left.
///
/// A base of EngineCore (EngineCore::uncounted() is the way to it), which it reads and drives
/// as a friend; set up with the core (plan), then used by the release policies, on the driving
/// thread. A base rather than a member holding a reference to the core: its steps reach the
/// core at a fixed offset from their own `this`, with no pointer to load and keep in a register
/// (the member cost data-flow 10 instructions per task with one thread, 179 → 189).
class UncountedRuns {
 public:
  UncountedRuns() = default;
  UncountedRuns(const UncountedRuns&) = delete;
  UncountedRuns& operator=(const UncountedRuns&) = delete;

  /// Sets up for the plan: the tasks in `serial_order` with their `info` (TaskInfo::in_place
  /// set). Once, as the core is built.
  void plan(const std::vector<TaskIndex>& serial_order, std::span<const TaskInfo> info);
  /// Every task is in place (TaskInfo::in_place): the only plans these runs apply to.
  [[nodiscard]] bool applies() const noexcept { return all_in_place_; }

  /// What run did with an instance.
  enum class Outcome : std::uint8_t {
    ran,          // it ran and finished here (the caller counts its completion)
    not_started,  // it did not start: handed over, the caller releases it the general way
    handed_over,  // it started and is finished (or will be) the general way
  };
  /// One instance, on the thread that is its scheduler's only runner, every producer
  /// finished: its release under its lane's claim, its body and a plain finish (its state and
  /// the claim's side of it), as InPlaceRuns::run, without counting down
  /// anything or re-arming its counter. Anything unusual calls `hand_over(started)` first,
  /// which sets the counters the general path counts down, and then finishes the instance the
  /// general way (or leaves it to its coroutine), or leaves it not started. `info`, `sync`,
  /// `slot`: its task's, its entry and its iteration's slot, which the caller has at hand
  /// (read through `in` after the claim's fence and the routine's call, they would be read
  /// again: 3 instructions per task). Flattened into its callers.
  template <class HandOver>
  Outcome run(Instance& in, const TaskInfo& info, IterationSync& sync, const ContextSlot& slot,
              HandOver&& hand_over) noexcept;
  /// The last instance of the iteration of `sync` finished here (run counted the sinks): it
  /// is complete, as the last finish of the reference path would store it.
  void complete(IterationSync& sync) noexcept;

  /// Data-flow (DataFlowRelease::advance, this thread the scheduler's only runner): whether
  /// iteration `sync.iter`, just admitted, can run whole: nothing unusual going on (no trouble
  /// or hooks), and the iteration before complete without device work, so each of its
  /// instances is ready once its producers in the iteration ran.
  [[nodiscard]] bool runs_whole(const IterationSync& sync) const noexcept;
  /// Runs the admitted iteration of `sync` (runs_whole) here, its tasks in serial order, each
  /// re-armed for its entry's next iteration; it completes at the end (true). The count-downs
  /// its instances owe the next iteration's counters (lane edges, inter dependencies) are left
  /// owed: the caller pays them (pay_owed) if the next iteration goes the general way.
  /// Anything unusual hands the rest of the iteration to the general path (what is released
  /// then runs as `here` ends: the admission's) and returns false, with nothing owed.
  bool run_iteration(IterationSync& sync, std::optional<RunQueueHooks::RunHere>& here) noexcept;
  /// The count-downs the iteration of `sync`, run whole, owes the one after it, made before
  /// that one goes the general way. None of them is the last (its admission token, or a
  /// producer of its own, is still counted).
  void pay_owed(IterationSync& sync) noexcept { count_down_next(sync, size()); }

  /// The clock, after a stretch of uncounted periods: sets every join counter to what the
  /// general path would have left. An instance of an iteration in flight (or of the next one,
  /// not admitted yet) that has not finished waits for its producers that have not finished
  /// (in its iteration and the one before, its lane edge) and for its period's start token;
  /// one that finished, or `running` (started, finished the general way), is re-armed for its
  /// entry's next iteration, as is every instance of the entries nobody uses yet.
  void count_afresh(const Instance* running) noexcept;

  /// Called by the completion of a coroutine body: true when run started it and has not
  /// handed it over yet, which then finishes it (exactly one of the two does); false: the
  /// completion finishes it. One load when run started no body.
  bool takes_completion(Instance& done) noexcept {
    Instance* starting = &done;
    return body_here_.load(std::memory_order_relaxed) == &done &&
           body_here_.compare_exchange_strong(starting, nullptr, std::memory_order_acq_rel);
  }

 private:
  [[nodiscard]] std::size_t size() const noexcept { return serial_position_.size(); }
  // run's start of a body that did not complete in its call (a coroutine): true when it
  // completed while starting (its error, if any, in in.error()), and the caller finishes it;
  // false when it suspended, still the caller's to hand over (body_here_).
  bool ran_body_here(Instance& in, const TaskInfo& info, ErasedCo& body) noexcept;
  // The rest of run_iteration's iteration goes the general way from serial position `k`,
  // whose instance is either not started (`started` false: released now, the general way) or
  // ran and is finishing (true: the caller finishes it or starts its body): opens `here`, pays
  // what the instances before k owe the next iteration, and sets the counters of the
  // instances after k (and the iteration's `remaining`) as if each instance before k had
  // counted them down; those left with nothing to wait for are released.
  [[gnu::noinline]] void go_on_generally(IterationSync& sync, std::size_t k, bool started,
                                         std::optional<RunQueueHooks::RunHere>& here) noexcept;
  // How many of the intra producers of `in` are at serial position `k` or after (those a
  // hand-over at k leaves unfinished).
  [[nodiscard]] int waits_from(const Instance& in, std::size_t k) const noexcept;
  // A hand-over at serial position k of the iteration of `sync`: the instances at positions
  // `first` and after get the counters the count-downs of those before k would have left...
  void set_counters_from(IterationSync& sync, std::size_t k, std::size_t first) noexcept;
  // ... and those of them with nothing to wait for are released.
  void release_unblocked_from(IterationSync& sync, std::size_t k, std::size_t first) noexcept;
  // The count-downs the instances at serial positions [0, upto) of the iteration of `sync`
  // owe the iteration after it.
  void count_down_next(IterationSync& sync, std::size_t upto) noexcept;
  // What count_afresh sets the counter of `in` (of iteration `iter`, `admitted` or the next) to.
  [[nodiscard]] int afresh_count(const Instance& in, std::int64_t iter, bool admitted,
                                 const Instance* running) const noexcept;

  // The core this is a base of.
  [[nodiscard]] EngineCore& core() noexcept;
  [[nodiscard]] const EngineCore& core() const noexcept;

  bool all_in_place_ = false;
  // Per task, its position in the serial order; per position, how many instances from there
  // on count towards completion (TaskInfo::counts_completion).
  std::vector<std::size_t> serial_position_;
  std::vector<int> completions_from_;
  // The instance whose coroutine body run started and has not seen suspend or complete
  // (nullptr: none). Whichever clears it — the body's completion (takes_completion), or run
  // after the hand-over of a body that suspended — leaves the finish to the other: exactly
  // one of them finishes the instance, and the general finish only ever comes after the
  // hand-over set the counters it counts down (the body may be resumed by another thread
  // driving the same pool).
  std::atomic<Instance*> body_here_{nullptr};
};

}  // namespace swp::detail
