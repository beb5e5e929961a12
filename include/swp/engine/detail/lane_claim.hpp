#pragma once
// LaneClaim: a task alone on its lane runs its instances without the lane's hand-off, and the
// protocol of its releases and finishes (FastPaths::lane_claims; not for direct use).

#include <atomic>
#include <memory>
#include <vector>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/lane.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/instance.hpp"

namespace swp::detail {

/// A task alone on its lane in this pipeline (not globally ordered) has a lane edge: the
/// finish of its instance of the iteration before is one more thing its instance waits for,
/// so its instances run one after the other in iteration order without the lane's help.
/// Both engines count the edge in the join counter (data-flow releases the instance once it
/// is done; the clock engine runs it then, once its period released it). For a run, the
/// engine claims the lane (Lane::try_claim) and runs the task's instances as runnables of the
/// lane's scheduler: no lane hand-off per instance. Another submitter to the lane revokes the
/// claim; from then on, to the run's end, the task's instances go through the lane again (the
/// edge stays: it only repeats the lane's order), and the claim ends once no instance released
/// under it is left.
///
/// With claims on, a task that shares its lane (not globally ordered) has a lane edge too,
/// without a claim (TaskInfo::lane_edge). Its lane would order its instances only in the
/// order they reach it, and a producer under a claim can release the next iteration's first:
/// the producer's next instance runs as soon as its counter allows, which may be before its
/// instance before finished counting down (the admission's token comes from another thread),
/// where its lane would have started it only after that step. Found by the randomized suite
/// (`random plans of short tasks with a worker that takes none of them`, SWP_TEST_SEED=3114).
///
/// The protocol is a store-buffering pattern with Lane::submit_to_claimed: a release (or a
/// start in place) stores that its instance holds the claimed lane, then looks at the claim
/// (hold_claimed_lane); a revoker stores the revocation, then looks at whether an instance
/// holds the lane (holds_lane). One of the two sees the other. The pipelines' behaviour under
/// claims and revocations is tested in tests/engine/test_lane_claims.cpp.
class LaneClaim final : public Lane::Claim {
 public:
  /// The claim of `task`, alone on `lane`, in a pipeline whose sync entries are `entries` (the
  /// vector itself: it may be filled after the claim is made).
  LaneClaim(const std::vector<IterationSync>& entries, TaskIndex task, Lane& lane) noexcept
      : entries_(entries), task_(task), lane_(lane) {}
  // Whether an instance of the task released under the claim has not finished.
  [[nodiscard]] bool holds_lane() const noexcept override;
  [[nodiscard]] TaskIndex task() const noexcept { return task_; }
  [[nodiscard]] Lane& lane() const noexcept { return lane_; }
  // The run claimed the lane and no revocation was seen yet (instances bypass the lane).
  // Set by the caller between runs; cleared by the task's releases and finishes once they
  // see the claim revoked.
  std::atomic<bool> bypassing{false};

 private:
  const std::vector<IterationSync>& entries_;
  TaskIndex task_;
  Lane& lane_;
};

/// The claims of a pipeline's tasks alone on their lanes, taken for each run.
class LaneClaims {
 public:
  /// A claim for `task`, alone on `lane` (see LaneClaim's constructor); its address is stable.
  LaneClaim& add(const std::vector<IterationSync>& entries, TaskIndex task, Lane& lane) {
    claims_.push_back(std::make_unique<LaneClaim>(entries, task, lane));
    return *claims_.back();
  }
  /// Claims every lane for a run, ending any claim still held first; a lane that cannot be
  /// claimed (another user) runs its task's instances through it.
  void take_all() noexcept;
  /// Ends every claim: nothing of the run holds its lane any more.
  void end_all() noexcept;

 private:
  std::vector<std::unique_ptr<LaneClaim>> claims_;
};

/// The owner's side of the pattern, for `in` released (or started) under its task's claim in
/// `state`: stores that it holds the claimed lane (`bypassed` before the state, release: a
/// revoker that sees it released also sees that), then, after the light fence that orders
/// those stores before the look, whether the claim stands. `lane` and `claim` are read by the
/// caller before the fence, which makes the compiler read again whatever is read after it.
inline bool hold_claimed_lane(Instance& in, const Lane& lane, const LaneClaim& claim,
                              InstanceState state) noexcept {
  in.bypassed.store(true, std::memory_order_relaxed);
  in.set_state(state);
  detail::light_fence();
  return lane.claim_holds(claim);
}

/// release_under_claim past a revocation (cold): `in` takes the lane, and so do the task's
/// next instances; the claim ends unless an instance released under it is left.
[[gnu::noinline]] void give_up_claim(Instance& in) noexcept;

/// The release of `in`, an instance of a task with a lane claim: stores whether it bypasses
/// the lane, then its state (`queued`), and then looks at the claim; true when it stands (after
/// a revocation, gives the claim up and says no from then on). On the hot path of every
/// release of such a task (EngineCore::submit).
[[gnu::always_inline]] inline bool release_under_claim(Instance& in) noexcept {
  const TaskInfo& info = *in.info;
  LaneClaim& claim = *info.claim;
  // Read before the fence, which makes the compiler read again whatever it reads after it.
  const Lane& lane = *info.lane;
  if (!claim.bypassing.load(std::memory_order_relaxed)) {
    in.bypassed.store(false, std::memory_order_relaxed);
    in.set_state(InstanceState::queued);
    return false;
  }
  if (hold_claimed_lane(in, lane, claim, InstanceState::queued)) [[likely]]
    return true;
  give_up_claim(in);
  return false;
}

/// finish_under_claim past a revocation (cold): ends the claim unless a later instance
/// released under it is left.
[[gnu::noinline]] void end_revoked_claim(LaneClaim& claim, Lane& lane) noexcept;

/// The finish of an instance of the task of `info`, released under its lane's claim, its
/// state (`finished`) stored: the owner's other side of the pattern. On the hot path of every
/// finish under a claim.
inline void finish_under_claim(const TaskInfo& info) noexcept {
  LaneClaim& claim = *info.claim;
  Lane& lane = *info.lane;  // before the fence (see hold_claimed_lane)
  detail::light_fence();
  if (lane.claim_holds(claim)) [[likely]]
    return;
  end_revoked_claim(claim, lane);
}

/// The same for `in`.
inline void finish_under_claim(const Instance& in) noexcept { finish_under_claim(*in.info); }

}  // namespace swp::detail
