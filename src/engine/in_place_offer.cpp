// InPlaceOffer: the taker's side, and the owner's waits for it.

#include "swp/engine/detail/in_place_offer.hpp"

#include <thread>

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

std::size_t InPlaceOffer::taken_at() const noexcept {
  std::uint64_t decision = 0;
  // acquire: the counters the taker set, and what it counted down.
  wait_for_taker([&] {
    decision = decision_.load(std::memory_order_acquire);
    return (decision & state_mask) == ready;
  });
  return static_cast<std::size_t>(decision >> position_shift);
}

void InPlaceOffer::withdraw(Scheduler& scheduler) noexcept {
  if (scheduler.withdraw(*this)) return;  // nobody took it
  // Taken: the taker touches the offer until it published its decision (ready) or, beaten by
  // the owner's, that it left.
  wait_for_taker([&] {
    const std::uint64_t decision = decision_.load(std::memory_order_acquire);
    return (decision & state_mask) == ready || (decision & taker_gone) != 0;
  });
}

void InPlaceOffer::run() noexcept {
  taken_.store(true, std::memory_order_relaxed);
  heavy_fence();
  // acquire: pairs with taken_before's release: the instances before q finished.
  const std::size_t q = position_.load(std::memory_order_acquire);
  std::uint64_t expected = undecided;
  if (!decision_.compare_exchange_strong(expected, taking, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
    // The owner hands the iteration over itself. release: the owner may offer this again
    // once it sees this store, the last touch of the offer here.
    decision_.store(expected | taker_gone, std::memory_order_release);
    return;
  }
  // Counters and releases before the decision is published: the owner waits for it before it
  // returns, so the pipeline stays while this runs.
  take_over(q);
  // release: the counters and count-downs, for the owner's part (its instance at q). The last
  // touch of the offer and of the pipeline: the owner may offer it again, and return, from
  // here on.
  decision_.store((static_cast<std::uint64_t>(q) << position_shift) | ready,
                  std::memory_order_release);
}

}  // namespace swp::detail
