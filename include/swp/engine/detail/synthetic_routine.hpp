#pragma once
// SyntheticRoutine: the routine of a task without a body — it spends the plan's synthetic
// costs (CPU time on the lane, device work on the task's stream).

#include <chrono>

#include "swp/async/co.hpp"
#include "swp/core/synthetic_cost.hpp"
#include "swp/engine/detail/task_routine.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

/// Device-only costs are queued without a coroutine; a CPU cost is spent by a coroutine that
/// awaits the runtime's CPU work (a spin on host, virtual time on sim).
class SyntheticRoutine final : public TaskRoutine {
 public:
  explicit SyntheticRoutine(const SyntheticCost& cost) : cost_(cost) {}

  /// Whether a task with `cost` has anything to do at all.
  static bool needed(const SyntheticCost& cost) noexcept {
    return cost.cpu_us > 0 || cost.device_us > 0 || cost.jitter_device_us > 0;
  }

  ReleasedCo run(void*, TaskScope& scope, OutputBox*) const override {
    if (cost_.cpu_us > 0) return ErasedCo(spend(scope)).release();
    queue_device_work(scope);
    return {};
  }

 private:
  using us = std::chrono::duration<double, std::micro>;

  Co<void> spend(TaskScope& scope) const {
    co_await scope.cpu_work(std::chrono::duration_cast<Clock::duration>(us(cost_.cpu_us)));
    queue_device_work(scope);
  }

  void queue_device_work(TaskScope& scope) const {
    const double device_us = cost_.device_us_at(scope.iter());
    if (device_us > 0) scope.device_work(std::chrono::duration_cast<Clock::duration>(us(device_us)));
  }

  SyntheticCost cost_;
};

}  // namespace swp::detail
