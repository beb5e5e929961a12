#include "stage_body.hpp"

#include <algorithm>
#include <chrono>

namespace swp_bench {

void stage_body(std::uint64_t steps) noexcept {
  std::uint64_t x = steps;
  for (std::uint64_t i = 0; i < steps; ++i) {
    // A 64-bit LCG step: each depends on the one before it, so they cannot overlap; the empty
    // asm makes x opaque, so the loop cannot be folded into a closed form.
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  // A compiler barrier: the call is not reordered with the caller's memory accesses around it
  // (the same for every system), and x counts as used.
  asm volatile("" : : "r"(x) : "memory");
}

double calibrate_steps_per_us() {
  using Clock = std::chrono::steady_clock;
  constexpr std::uint64_t steps = 200'000;  // a few hundred µs: far above the clock's cost
  double best_us = 0;
  for (int trial = 0; trial < 15; ++trial) {
    const auto start = Clock::now();
    stage_body(steps);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    best_us = trial == 0 ? us : std::min(best_us, us);
  }
  return static_cast<double>(steps) / best_us;
}

}  // namespace swp_bench
