// How long a polling round takes here (see detail/polling.hpp).

#include "swp/async/detail/polling.hpp"

#include <chrono>
#include <limits>

namespace swp::detail {

// How long one pause_round() takes here, measured once (the pause instruction costs from 10 to
// 140 cycles depending on the CPU); the best of a few tries, so a preemption does not count.
double pause_round_ns() {
  using Clock = std::chrono::steady_clock;
  static const double ns = [] {
    double best = std::numeric_limits<double>::max();
    for (int attempt = 0; attempt < 3; ++attempt) {
      constexpr int rounds = 64;
      const auto start = Clock::now();
      for (int i = 0; i < rounds; ++i) pause_round();
      const std::chrono::duration<double, std::nano> took = Clock::now() - start;
      best = std::min(best, took.count() / rounds);
    }
    return std::max(best, 1.0);
  }();
  return ns;
}

}  // namespace swp::detail
