// LaneClaim: what a revoker asks of a claim, the cold ends of the protocol, and a pipeline's
// claims taken and ended per run.

#include "swp/engine/detail/lane_claim.hpp"

namespace swp::detail {

bool LaneClaim::holds_lane() const noexcept {
  for (const IterationSync& sync : entries_)
    if (sync.instances[task_].holds_claimed_lane()) return true;
  return false;
}

void give_up_claim(Instance& in) noexcept {
  // Revoked: this instance takes the lane, and so do the task's next ones; the claim ends now
  // unless an instance released under it is left (the clock releases the next instance
  // before the last one finished), whose finish ends it.
  LaneClaim& claim = *in.info->claim;
  in.bypassed.store(false, std::memory_order_relaxed);
  claim.bypassing.store(false, std::memory_order_relaxed);
  in.info->lane->end_claim(claim);
}

void end_revoked_claim(LaneClaim& claim, Lane& lane) noexcept {
  claim.bypassing.store(false, std::memory_order_relaxed);
  lane.end_claim(claim);  // unless a later instance released under it is left
}

void LaneClaims::take_all() noexcept {
  for (const auto& claim : claims_) {
    Lane& lane = claim->lane();
    lane.end_claim(*claim);
    claim->bypassing.store(lane.try_claim(*claim), std::memory_order_relaxed);
  }
}

void LaneClaims::end_all() noexcept {
  for (const auto& claim : claims_) {
    claim->bypassing.store(false, std::memory_order_relaxed);
    claim->lane().end_claim(*claim);
  }
}

}  // namespace swp::detail
