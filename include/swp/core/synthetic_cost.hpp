#pragma once
// SyntheticCost: the made-up work `swp run` performs for a task that has no real body.

namespace swp {

/// The largest synthetic cost, in microseconds (1000 s), and the smallest is 0 (validation
/// rule `cost_limit`): far beyond any task's real cost and the engines' deadlines, and small
/// enough that the clock arithmetic of a run (int64 nanoseconds) cannot overflow.
inline constexpr double max_cost_us = 1e9;

/// Synthetic cost of one task instance, used only when a plan is executed without user code
/// (`swp run`, benchmarks, the tuner). All durations are microseconds.
///
/// - `cpu_us`: busy CPU time spent in the task itself.
/// - `device_us`: work queued on the task's stream.
/// - every `jitter_every`-th iteration (iter % jitter_every == jitter_every − 1) the device work
///   takes `jitter_device_us` instead; 0 disables jitter.
struct SyntheticCost {
  double cpu_us = 0;
  double device_us = 0;
  int jitter_every = 0;
  double jitter_device_us = 0;

  /// Device time of iteration `iter`, jitter included.
  [[nodiscard]] double device_us_at(long long iter) const {
    if (jitter_every > 0 && iter % jitter_every == jitter_every - 1) return jitter_device_us;
    return device_us;
  }
  /// Mean device time per iteration over a jitter period.
  [[nodiscard]] double mean_device_us() const {
    if (jitter_every <= 0) return device_us;
    return (device_us * (jitter_every - 1) + jitter_device_us) / jitter_every;
  }

  friend bool operator==(const SyntheticCost&, const SyntheticCost&) = default;
};

}  // namespace swp
