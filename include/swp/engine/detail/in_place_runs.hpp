#pragma once
// InPlaceRuns: a ready instance run on the releasing thread itself, and data-flow's chains of
// them, with one thread (FastPaths::in_place; not for direct use).

#include <atomic>

#include "swp/engine/detail/instance.hpp"
#include "swp/engine/detail/releasing.hpp"

namespace swp::detail {

class EngineCore;

/// The in-place fast path. A task alone on its lane (TaskInfo::in_place: it has a lane claim,
/// and its lane runs on the runtime's scheduler) whose instance becomes ready on the thread
/// that is its scheduler's only runner can run right there, instead of a post and a run
/// queue's round trip: the clock's period with one thread runs each such instance as its
/// start token makes it ready (run), and a data-flow admission on such a thread runs what it
/// makes ready, then what those finishes make ready, one after the other (run_chain).
///
/// Equal to the general path: an instance runs in place only when nothing unusual goes on (no
/// trouble or hooks, no failure or device work in its iteration, none in the iteration before
/// where it has inter dependencies) and its lane's claim stands; then it is re-armed and runs
/// as EngineCore::release_now (or ClockRelease::start_under_claim) and proceed() would run it
/// on their common path. Otherwise it does nothing that matters, and the caller releases it
/// the general way, which finds what differs. Tested for equality with the reference path
/// (tests/engine/test_fast_paths.cpp) and on its own (tests/engine/test_pipeline_in_place.cpp).
///
/// A base of EngineCore (EngineCore::in_place() is the way to it), which it drives as a
/// friend: its steps reach the core at a fixed offset (see UncountedRuns).
class InPlaceRuns {
 public:
  InPlaceRuns() = default;
  InPlaceRuns(const InPlaceRuns&) = delete;
  InPlaceRuns& operator=(const InPlaceRuns&) = delete;

  /// Runs `in`, ready, of a TaskInfo::in_place task, here and now when it can (see above):
  /// its release under its lane's claim, its body and its finish with the count-downs (the
  /// successors' releases, its iteration's completion). False: it did nothing that matters,
  /// its counter untouched. Compiled for the engine that calls it (see Releasing).
  template <Releasing R>
  bool run(Instance& in) noexcept;
  /// Data-flow with one thread (an admission's RunQueueHooks::RunHere open): runs `first`,
  /// ready, in place, and after it each in-place instance the finishes make ready, one after
  /// the other on this thread. What cannot run in place is released as usual (to the RunHere,
  /// which runs it next).
  void run_chain(Instance& first) noexcept;
  /// In run_chain on this thread: `in`, made ready by a finish, runs next in the chain (true),
  /// unless one is chosen already or `in` cannot run in place.
  bool chained_here(Instance& in) noexcept;

 private:
  [[nodiscard]] EngineCore& core() noexcept;

  // The thread in run_chain (the address of its this_thread_marker; nullptr: none), and the
  // next instance its chain runs. Only that thread writes either; an instance finishing on
  // another thread reads a marker that is not its own and releases as usual.
  std::atomic<const void*> chain_thread_{nullptr};
  Instance* run_next_ = nullptr;
};

}  // namespace swp::detail
