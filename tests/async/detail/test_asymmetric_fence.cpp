#include "swp/async/detail/asymmetric_fence.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

namespace test_asymmetric_fence {  // each test file's names apart (unity builds)

TEST_CASE("a light and a heavy fence order store-buffering on both sides") {
  if (!swp::detail::asymmetric_fences_available()) {
    MESSAGE("skipped: no heavy fences (membarrier) here");
    return;
  }
  // Each round: the light side stores x then loads y, the heavy side stores y then loads x.
  // Without a store-load barrier on both sides both loads may see 0 (x86 store buffers do
  // that); with the pair, at least one side sees the other's store.
  constexpr int rounds = 2000;
  std::atomic<int> x{0}, y{0};
  std::atomic<int> round{0};  // the light side starts round r when round == 2r + 1
  std::atomic<int> done{0};   // rounds the light side finished
  int both_missed = 0;
  int light_saw[rounds] = {};
  std::thread light([&] {
    for (int r = 0; r < rounds; ++r) {
      while (round.load(std::memory_order_acquire) != 2 * r + 1) {
      }
      x.store(1, std::memory_order_relaxed);
      swp::detail::light_fence();
      light_saw[r] = y.load(std::memory_order_relaxed);
      done.store(r + 1, std::memory_order_release);
    }
  });
  for (int r = 0; r < rounds; ++r) {
    x.store(0, std::memory_order_relaxed);
    y.store(0, std::memory_order_relaxed);
    round.store(2 * r + 1, std::memory_order_release);
    y.store(1, std::memory_order_relaxed);
    swp::detail::heavy_fence();
    const int heavy_saw = x.load(std::memory_order_relaxed);
    while (done.load(std::memory_order_acquire) != r + 1) {
    }
    if (heavy_saw == 0 && light_saw[r] == 0) ++both_missed;
  }
  light.join();
  CHECK(both_missed == 0);
}

}  // namespace test_asymmetric_fence
