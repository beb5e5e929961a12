// InPlaceOffer: the taker's side, the owner's waits for it, and the watch.

#include "swp/engine/detail/in_place_offer.hpp"

#include <cassert>
#include <thread>
#include <utility>

#include "swp/async/detail/polling.hpp"

namespace swp::detail {

namespace {

// Waits for the taker's short step (it sets a few counters): it runs now, unless it lost its
// CPU, which a yield now and then gives back.
template <class Done>
void wait_for_taker(Done done) noexcept {
  for (unsigned spins = 0; !done(); ++spins) {
    if (spins % 64 == 63) {
      std::this_thread::yield();
    } else {
      pause_round();
    }
  }
}

}  // namespace

bool InPlaceOffer::watch(RunQueueHooks& hooks) noexcept {
  if (life_ != nullptr) return true;
  if (!asymmetric_fences_available()) return false;
  // Fresh: the last watch ended with the offer in no thread's hands (unwatch).
  position_.store(idle, std::memory_order_relaxed);
  taken_.store(false, std::memory_order_relaxed);
  decision_.store(undecided, std::memory_order_relaxed);
  // Published by the watch's offer (a seq_cst exchange) to whoever takes it.
  life_ = hooks.watch(*this);
  if (life_ == nullptr) return false;
  hooks_ = &hooks;
  armed_ = true;
  return true;
}

void InPlaceOffer::unwatch() noexcept {
  if (life_ == nullptr) return;
  if (armed_) {
    // Between runs (position idle): a thread that took it declines; its decision is its last
    // touch.
    if (!hooks_->take_back(*this)) {
      wait_for_taker([&] {
        return (decision_.load(std::memory_order_acquire) & state_mask) == ready;
      });
    }
  } else {
    rearm_wait();
  }
  hooks_->unwatch(*this);
  life_ = nullptr;
  hooks_ = nullptr;
  armed_ = false;
}

bool InPlaceOffer::claim_for_owner() noexcept {
  std::uint64_t expected = undecided;
  if (!decision_.compare_exchange_strong(expected, owner, std::memory_order_acq_rel,
                                         std::memory_order_acquire))
    return false;
  armed_ = false;
  // The run goes on the general way, where this thread may wait a while: out of the offer, so
  // that no idle thread takes it only to lose (a heavy fence for nothing). One that took it
  // already loses the decision and leaves (see rearm_wait).
  took_back_ = hooks_->take_back(*this);
  life_->store(life_->load(std::memory_order_relaxed) & ~RunQueueHooks::watch_inside,
               std::memory_order_relaxed);
  return true;
}

void InPlaceOffer::rearm_wait() noexcept {
  // After a take the owner saw the decision (taken_at): the taker is done with it. After the
  // owner's own claim a thread that took it first loses the decision and leaves (taker_gone).
  if ((decision_.load(std::memory_order_relaxed) & state_mask) != owner) return;
  if (std::exchange(took_back_, false) || hooks_->take_back(*this)) return;
  wait_for_taker(
      [&] { return (decision_.load(std::memory_order_acquire) & taker_gone) != 0; });
}

void InPlaceOffer::rearm() noexcept {
  rearm_wait();
  position_.store(idle, std::memory_order_relaxed);
  taken_.store(false, std::memory_order_relaxed);
  decision_.store(undecided, std::memory_order_relaxed);
  // Published by rewatch's seq_cst exchange to whoever takes it next.
  hooks_->rewatch(*this);
  armed_ = true;
}

bool InPlaceOffer::taken_now(std::size_t k) noexcept {
  for (;;) {
    std::uint64_t decision = 0;
    // acquire: the counters the taker set, and what it counted down.
    wait_for_taker([&] {
      decision = decision_.load(std::memory_order_acquire);
      return (decision & state_mask) == ready;
    });
    armed_ = false;
    if ((decision >> position_shift) != idle) return true;  // taken_at reads it
    // It took the offer between runs, and left: offered again, and this position looked at
    // afresh.
    rearm();
    position_.store(k, std::memory_order_release);
    light_fence();
    if (!taken_.load(std::memory_order_relaxed)) return false;
  }
}

std::size_t InPlaceOffer::taken_at() noexcept {
  std::uint64_t decision = 0;
  // acquire: as in taken_now (a look that returned true waited already; a lost claim waits
  // here).
  wait_for_taker([&] {
    decision = decision_.load(std::memory_order_acquire);
    return (decision & state_mask) == ready;
  });
  armed_ = false;
  const auto q = static_cast<std::size_t>(decision >> position_shift);
  assert(q != idle);
  return q;
}

void InPlaceOffer::run() noexcept {
  taken_.store(true, std::memory_order_relaxed);
  heavy_fence();
  // acquire: pairs with look's release: the instances before q finished.
  const std::size_t q = position_.load(std::memory_order_acquire);
  std::uint64_t expected = undecided;
  if (!decision_.compare_exchange_strong(expected, taking, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
    // The owner hands the run over itself. release: the owner may offer this again once it
    // sees this store, the last touch of the offer here.
    decision_.store(expected | taker_gone, std::memory_order_release);
    return;
  }
  // Between runs: nothing to take (the owner offers it again at its next look). Else the
  // counters and releases before the decision is published: the owner waits for it before it
  // goes on, so the pipeline stays while this runs.
  if (q != idle) take_over(q);
  // release: the counters and count-downs, for the owner's part (its instance at q). The last
  // touch of the offer and of the pipeline: the owner may offer it again, and return, from
  // here on.
  decision_.store((static_cast<std::uint64_t>(q) << position_shift) | ready,
                  std::memory_order_release);
}

}  // namespace swp::detail
