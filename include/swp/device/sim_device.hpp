#pragma once
// The sim backend: streams in virtual time on a SimScheduler, fully deterministic.

#include "swp/async/sim_scheduler.hpp"
#include "swp/device/stream.hpp"

namespace swp {

/// Streams whose work items take virtual time: an item starting at t completes at
/// t + duration on the SimScheduler's clock. `synchronize()` drives the scheduler until the
/// stream is empty (throws std::runtime_error if it can never empty: a wait that nothing will
/// satisfy).
///
/// A SimDevice made without a scheduler brings its own (what a Runtime given a sim device runs
/// on: virtual time belongs to the sim backend).
///
/// Example: `swp::SimScheduler sim; swp::SimDevice dev(sim); auto s = dev.make_stream("x");`
class SimDevice final : public Device {
 public:
  SimDevice() : own_(std::make_unique<SimScheduler>()), scheduler_(*own_) {}
  explicit SimDevice(SimScheduler& scheduler) : scheduler_(scheduler) {}
  std::unique_ptr<Stream> make_stream(std::string name) override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "sim"; }
  [[nodiscard]] SimScheduler* virtual_time() noexcept override { return &scheduler_; }

 private:
  std::unique_ptr<SimScheduler> own_;
  SimScheduler& scheduler_;
};

}  // namespace swp
