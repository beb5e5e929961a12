#include "swp/engine/detail/in_place_offer.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>

#include "support/eventually.hpp"
#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_in_place_offer {  // each test file's names apart (unity builds)

using swp::test::eventually;
using namespace std::chrono_literals;

namespace {

// Records the taker's take-overs: how many, and the position of the last.
class RecordingOffer final : public swp::detail::InPlaceOffer {
 public:
  std::atomic<int> take_overs{0};
  std::atomic<std::size_t> taken_from{0};
  ~RecordingOffer() { unwatch(); }

 private:
  void take_over(std::size_t q) noexcept override {
    taken_from.store(q);
    take_overs.fetch_add(1);
  }
};

constexpr std::size_t positions = 5;

// One run of `positions` instances; at `stall` the owner stops (inside its instance) until a
// taker has taken over. Returns the position the taker took over at (positions: none).
std::size_t run(RecordingOffer& offer, std::size_t stall = positions) {
  REQUIRE(offer.begin());
  const int before = offer.take_overs.load();
  for (std::size_t k = 0; k < positions; ++k) {
    // A slow machine may deschedule this thread for longer than a worker's patience at any
    // point: a take before the stall is legal too.
    if (offer.taken_before(k)) return offer.taken_at();
    if (k == stall) CHECK(eventually([&] { return offer.take_overs.load() > before; }));
    offer.ran_one();
  }
  return offer.taken_at_end() ? offer.taken_at() : positions;
}

}  // namespace

TEST_CASE("an in-place offer is not watched by a pool without workers") {
  swp::ThreadPoolScheduler pool(0);
  RecordingOffer offer;
  CHECK_FALSE(offer.watch(pool));
  CHECK_FALSE(offer.begin());  // the runs go the general way
}

TEST_CASE("a taker takes an in-place run over at the owner's position once the owner stalls") {
  if (!swp::detail::asymmetric_fences_available()) return;  // the offer is never watched
  swp::ThreadPoolScheduler pool(1);
  RecordingOffer offer;
  REQUIRE(offer.watch(pool));
  for (int round = 0; round < 3; ++round) {
    const int before = offer.take_overs.load();
    const std::size_t q = run(offer, 2);
    // The taker read the owner's position: the stalled instance (2), or one before it where
    // this thread lost its CPU; the owner learns it at its next look.
    CHECK(q <= 2);
    CHECK(offer.take_overs.load() == before + 1);
    CHECK(offer.taken_from.load() == q);
  }
}

TEST_CASE("a taker that finds the owner between runs declines, and the owner offers it again") {
  if (!swp::detail::asymmetric_fences_available()) return;
  swp::ThreadPoolScheduler pool(1);
  RecordingOffer offer;
  REQUIRE(offer.watch(pool));
  const int before = offer.take_overs.load();
  std::size_t q = run(offer);
  // Away for many patiences (a slow source): a worker takes the offer, finds no run and
  // leaves it; the next run's first look offers it again.
  std::this_thread::sleep_for(20ms);
  if (q == positions) q = run(offer);
  if (q == positions) {
    CHECK(offer.take_overs.load() == before);  // nothing was taken over
  } else {
    CHECK(offer.take_overs.load() == before + 1);  // only where this thread lost its CPU
  }
  // Still watched: a stall is taken over as before.
  const int now = offer.take_overs.load();
  CHECK(run(offer, 3) <= 3);
  CHECK(offer.take_overs.load() == now + 1);
}

TEST_CASE("an owner that claims the hand-over itself beats a late taker, and runs on") {
  if (!swp::detail::asymmetric_fences_available()) return;
  swp::ThreadPoolScheduler pool(1);
  RecordingOffer offer;
  REQUIRE(offer.watch(pool));
  for (int round = 0; round < 20; ++round) {
    REQUIRE(offer.begin());
    if (offer.taken_before(0)) {
      (void)offer.taken_at();  // lost its CPU first: the taker has the run
      continue;
    }
    // An unusual instance at 0: the owner hands the run over itself, unless a taker came
    // first (then it has it).
    if (!offer.claim_for_owner()) CHECK(offer.taken_at() == 0);
    // Meanwhile a worker may take the offer: it loses the decision and leaves.
    if (round % 2 == 0) std::this_thread::sleep_for(1ms);
  }
  const int before = offer.take_overs.load();
  CHECK(run(offer, 1) <= 1);  // re-armed: a stall is taken over
  CHECK(offer.take_overs.load() == before + 1);
}

}  // namespace test_in_place_offer
