#include "swp/engine/runtime.hpp"

#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"

#include <stdexcept>

namespace swp {

std::string_view backend_name(Backend backend) {
  return backend == Backend::host ? "host" : "sim";
}

bool parse_backend(std::string_view name, Backend& backend) {
  if (name == "host") {
    backend = Backend::host;
  } else if (name == "sim") {
    backend = Backend::sim;
  } else {
    return false;
  }
  return true;
}

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {
  if (options_.backend == Backend::sim) {
    auto sim = std::make_unique<SimScheduler>();
    sim_ = sim.get();
    device_ = std::make_unique<SimDevice>(*sim);
    scheduler_ = std::move(sim);
  } else {
    scheduler_ = std::make_unique<ThreadPoolScheduler>(options_.workers);
    device_ = std::make_unique<HostDevice>();
  }
}

Runtime::Runtime(std::unique_ptr<Scheduler> scheduler, RuntimeOptions options)
    : options_(std::move(options)), scheduler_(std::move(scheduler)) {
  if (!scheduler_) throw std::invalid_argument("Runtime: the scheduler is null");
  if (options_.backend != Backend::host || scheduler_->virtual_time())
    throw std::invalid_argument(
        "Runtime: a caller's scheduler runs the host backend only (sim brings its own clock)");
  device_ = std::make_unique<HostDevice>();
}

Runtime::~Runtime() {
  // Streams first (host streams join their workers); then every thread that may still be
  // finishing a lane step is joined, and only then the lanes go.
  streams_.clear();
  dedicated_.clear();
  scheduler_.reset();
  lanes_.clear();
}

Lane& Runtime::lane(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& lane = lanes_[name];
  if (!lane) {
    Scheduler* scheduler = scheduler_.get();
    if (sim_ == nullptr && options_.dedicated_lanes.contains(name)) {
      auto& own = dedicated_[name];
      own = std::make_unique<ThreadPoolScheduler>(1);
      scheduler = own.get();
    }
    lane = std::make_unique<Lane>(*scheduler, name);
  }
  return *lane;
}

Stream& Runtime::stream(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& stream = streams_[name];
  if (!stream) stream = device_->make_stream(name);
  return *stream;
}

bool Runtime::CpuWork::await_ready() const {
  if (duration_ <= Clock::duration::zero()) return true;
  if (runtime_.sim_ != nullptr) return false;
  // Host: really spend the CPU time on this thread, as the task's own computation would.
  const auto end = Clock::now() + duration_;
  while (Clock::now() < end) {
  }
  return true;
}

}  // namespace swp
