// InPlaceRuns: ready instances run on the releasing thread itself (the clock's periods and
// data-flow's chains, with one thread).

#include "swp/engine/detail/in_place_runs.hpp"

#include <utility>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/detail/engine_core_steps.hpp"
#include "swp/engine/detail/lane_claim.hpp"

namespace swp::detail {

// Flattened: the whole step in one function (the finish and its count-downs inline).
template <Releasing R>
[[gnu::flatten]] bool InPlaceRuns::run(Instance& in) noexcept {
  EngineCore& c = core();
  const TaskInfo& info = *in.info;
  LaneClaim& claim = *info.claim;
  Lane& lane = *info.lane;  // before the fence (see hold_claimed_lane)
  if (!claim.bypassing.load(std::memory_order_relaxed) || !c.proceeds_plainly(in)) [[unlikely]]
    return false;
  // The release's side of the claim, with the state it runs in. A revoked claim leaves the rest
  // to submit(), which stores them again, gives the claim up and queues the instance on its
  // lane (a revoker that saw it running waits for that).
  if (!hold_claimed_lane(in, lane, claim, InstanceState::running)) [[unlikely]]
    return false;
  c.rearm(in);
  EngineCore::forget_last_failure(in);
  if (info.routine == nullptr || c.run_routine(in, info)) c.finish_as<true, R>(in, no_error, true);
  return true;
}

// Flattened: the chain's steps inline, one frame for the whole chain (a call and a prologue per
// instance otherwise).
[[gnu::flatten]] void InPlaceRuns::run_chain(Instance& first) noexcept {
  chain_thread_.store(&this_thread_marker, std::memory_order_relaxed);
  Instance* in = &first;
  do {
    if (!run<Releasing::either>(*in)) core().release_now(*in, false);
    in = std::exchange(run_next_, nullptr);
  } while (in != nullptr);
  chain_thread_.store(nullptr, std::memory_order_relaxed);
}

// ClockRelease's period (clock_release.cpp) runs its ready instances through it.
template bool InPlaceRuns::run<Releasing::clock>(Instance&) noexcept;

}  // namespace swp::detail
