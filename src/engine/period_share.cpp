// PeriodShare: the clock period's ready instances, shared while their owner runs them.

#include "swp/engine/detail/period_share.hpp"

#include <algorithm>

#include "swp/engine/detail/engine_core.hpp"

namespace swp::detail {

void PeriodShare::grow(std::size_t wanted, std::size_t most) {
  std::size_t room = std::max(items_.size(), wanted);
  if (ran_out_) room = std::min(std::max(2 * items_.size(), wanted), std::max(most, wanted));
  ran_out_ = false;
  if (items_.size() < room) items_.resize(room);
}

bool PeriodShare::offer(bool sealed) noexcept {
  // relaxed: the offer publishes them (see start).
  state_.store(added_ | (sealed ? sealed_bit : 0), std::memory_order_relaxed);
  busy_.store(true, std::memory_order_relaxed);
  if (hooks_.offer(*this)) {
    offered_ = true;
    return true;
  }
  busy_.store(false, std::memory_order_relaxed);
  return false;
}

bool PeriodShare::seal() noexcept {
  // acq_rel: releases the items added since the offer; acquires a taker's drop.
  const std::size_t before = state_.exchange(added_ | sealed_bit, std::memory_order_acq_rel);
  if ((before & dropped_bit) == 0) return true;  // offered still (queued, or being run)
  // Dropped: in no queue, and its taker is gone. It was taken from this thread's slot, which
  // is free: offered again for what is left.
  if (hooks_.offer(*this)) return true;
  offered_ = false;
  busy_.store(false, std::memory_order_relaxed);
  return false;
}

bool PeriodShare::withdraw() noexcept {
  offered_ = false;
  if (!hooks_.withdraw(*this)) return false;
  busy_.store(false, std::memory_order_relaxed);  // nobody took it
  return true;
}

void PeriodShare::run() noexcept {
  for (;;) {
    std::size_t seen = 0;
    if (Instance* in = claim(seen)) {
      EngineCore& core = core_;
      // The unclaimed rest where any thread can take it; `this` may run elsewhere from here.
      scheduler_.post(*this);
      core.proceed(*in);
      return;
    }
    if ((seen & sealed_bit) != 0) {
      // release: the owner fills the share again only after this run's reads (busy()).
      busy_.store(false, std::memory_order_release);
      return;
    }
    // Nothing yet, and the owner may still add: dropped, unless the owner added or sealed
    // since the claim looked (then look again). From a successful drop on, the share is the
    // owner's: not touched here again.
    if (state_.compare_exchange_strong(seen, seen | dropped_bit, std::memory_order_acq_rel,
                                       std::memory_order_relaxed))
      return;
  }
}

}  // namespace swp::detail
