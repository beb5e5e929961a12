#include "swp/engine/runtime.hpp"

#include "swp/device/backends.hpp"

#include <stdexcept>

namespace swp {

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::host:
      return "host";
    case Backend::sim:
      return "sim";
    case Backend::cuda:
      return "cuda";
  }
  return "?";
}

bool parse_backend(std::string_view name, Backend& backend) {
  if (!backend_compiled(name)) return false;
  for (Backend b : {Backend::host, Backend::sim, Backend::cuda}) {
    if (backend_name(b) == name) {
      backend = b;
      return true;
    }
  }
  return false;
}

namespace {
// The Backend a device says it is; a device swp does not name runs in real time, as host.
Backend backend_of(const Device& device) {
  for (Backend b : {Backend::sim, Backend::cuda})
    if (backend_name(b) == device.backend()) return b;
  return Backend::host;
}

std::unique_ptr<Device> non_null(std::unique_ptr<Device> device) {
  if (!device) throw std::invalid_argument("Runtime: the device is null");
  return device;
}
}  // namespace

Runtime::Runtime(RuntimeOptions options)
    : Runtime(make_device(backend_name(options.backend)), options) {}

Runtime::Runtime(std::unique_ptr<Device> device, RuntimeOptions options)
    : options_(std::move(options)), device_(non_null(std::move(device))) {
  options_.backend = backend_of(*device_);
  device_->on_thread_start(options_.on_thread_start);
  if ((sim_ = device_->virtual_time()) != nullptr) {
    scheduler_ = sim_;
  } else {
    own_scheduler_ = std::make_unique<ThreadPoolScheduler>(
        options_.workers, ThreadPoolScheduler::default_spin, options_.on_thread_start);
    scheduler_ = own_scheduler_.get();
  }
}

Runtime::Runtime(std::unique_ptr<Scheduler> scheduler, RuntimeOptions options)
    : options_(std::move(options)), own_scheduler_(std::move(scheduler)) {
  if (!own_scheduler_) throw std::invalid_argument("Runtime: the scheduler is null");
  if (options_.backend == Backend::sim || own_scheduler_->virtual_time())
    throw std::invalid_argument(
        "Runtime: a caller's scheduler runs a real-time backend only (sim brings its own "
        "clock)");
  scheduler_ = own_scheduler_.get();
  device_ = make_device(backend_name(options_.backend));
  device_->on_thread_start(options_.on_thread_start);
}

Runtime::~Runtime() {
  // Streams first (host streams join their workers); then every thread that may still be
  // finishing a lane step is joined, and only then the lanes go. The device (and a sim
  // device's scheduler) goes last.
  streams_.clear();
  dedicated_.clear();
  own_scheduler_.reset();
  lanes_.clear();
}

Lane& Runtime::lane(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& lane = lanes_[name];
  if (!lane) {
    Scheduler* scheduler = scheduler_;
    if (sim_ == nullptr && options_.dedicated_lanes.contains(name)) {
      auto& own = dedicated_[name];
      own = std::make_unique<ThreadPoolScheduler>(1, ThreadPoolScheduler::default_spin,
                                                  options_.on_thread_start, name);
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
