#include "swp/engine/runtime.hpp"

#include "swp/device/backends.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/stream_limit_error.hpp"

#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

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

// The device of options.backend, host with options.max_host_streams.
std::unique_ptr<Device> device_for(const RuntimeOptions& options) {
  if (options.backend == Backend::host)
    return std::make_unique<HostDevice>(HostDeviceOptions{.max_streams = options.max_host_streams});
  return make_device(backend_name(options.backend));
}
}  // namespace

Runtime::Runtime(RuntimeOptions options) : Runtime(device_for(options), options) {}

Runtime::Runtime(std::unique_ptr<Device> device, RuntimeOptions options)
    : options_(std::move(options)), device_(non_null(std::move(device))) {
  options_.backend = backend_of(*device_);
  if (!options_.fast_paths) options_.fast_paths = FastPaths::from_environment();
  device_->on_thread_start([this](const ThreadStart& start) { begin_runtime_thread(start); });
  if ((sim_ = device_->virtual_time()) != nullptr) {
    scheduler_ = sim_;
  } else {
    own_scheduler_ = std::make_unique<ThreadPoolScheduler>(
        options_.workers, ThreadPoolScheduler::default_spin,
        [this](const ThreadStart& start) { begin_runtime_thread(start); });
    scheduler_ = own_scheduler_.get();
  }
}

void Runtime::begin_runtime_thread(const ThreadStart& start) const {
  // The device first: a worker that runs a task body, or a hook that sets up a library,
  // finds the runtime's GPU current (not GPU 0).
  device_->bind_thread();
  if (options_.on_thread_start) options_.on_thread_start(start);
}

Runtime::Runtime(std::unique_ptr<Scheduler> scheduler, RuntimeOptions options)
    : options_(std::move(options)), own_scheduler_(std::move(scheduler)) {
  if (!own_scheduler_) throw std::invalid_argument("Runtime: the scheduler is null");
  if (!options_.fast_paths) options_.fast_paths = FastPaths::from_environment();
  if (options_.backend == Backend::sim || own_scheduler_->virtual_time())
    throw std::invalid_argument(
        "Runtime: a caller's scheduler runs a real-time backend only (sim brings its own "
        "clock)");
  scheduler_ = own_scheduler_.get();
  device_ = device_for(options_);
  device_->on_thread_start([this](const ThreadStart& start) { begin_runtime_thread(start); });
}

Runtime::~Runtime() {
  // Streams first (host streams join their workers); then every thread that may still be
  // finishing a lane step is joined, and only then the lanes go. The device (and a sim
  // device's scheduler) goes last. The pools' threads post into each other (a dedicated
  // lane's scheduler gets the steps the main pool's workers release, and the other way): all
  // are joined before any is freed, or a worker still inside its post to a dedicated
  // scheduler (after the step it posted already ran and its pipeline drained) reads a freed
  // one (found by TSan, "destroying a filled pipeline drains what is in flight first").
  streams_.clear();
  for (auto& [name, pool] : dedicated_) pool->join_workers();
  if (auto* pool = dynamic_cast<ThreadPoolScheduler*>(own_scheduler_.get())) pool->join_workers();
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
      own = std::make_unique<ThreadPoolScheduler>(
          1, ThreadPoolScheduler::default_spin,
          [this](const ThreadStart& start) { begin_runtime_thread(start); }, name);
      scheduler = own.get();
    }
    lane = std::make_unique<Lane>(*scheduler, name);
  }
  return *lane;
}

void Runtime::keep_place_for_default(const std::string& name) const {
  // The engines make "default" lazily (serial runs, synchronize(), observers) so that a device
  // is asked only for what is used; on a device with a stream limit that must not let a
  // plan's streams take its last place, or the pipeline built fine fails at its first use of
  // "default". Refused here instead, while the pipeline is constructed. Under mutex_: no other
  // call of this runtime takes the place meanwhile.
  if (name == "default" || streams_.contains("default")) return;
  const auto left = device_->streams_left();
  // No place at all: the device's own refusal says so.
  if (!left || *left != 1) return;
  throw StreamLimitError(
      name,
      "Runtime: cannot make stream '" + name + "': the runtime has " +
          std::to_string(streams_.size() - 1) + (streams_.size() == 2 ? " stream" : " streams") +
          " and its " + std::string(device_->backend()) +
          " device's stream limit leaves one place only, which is kept for the stream 'default' "
          "(made on first use: by serial runs, synchronize() and run observers), so the plan's "
          "streams and 'default' do not fit together; raise the limit "
          "(RuntimeOptions::max_host_streams, default " +
          std::to_string(default_max_host_streams) +
          "; HostDeviceOptions::max_streams for a device of your own), give the plan fewer "
          "streams, or run it on the sim backend (no threads per stream)");
}

Stream& Runtime::stream(const std::string& name) { return stream(name, std::nullopt); }

Stream& Runtime::stream(const std::string& name, std::optional<int> priority) {
  std::lock_guard lock(mutex_);
  auto& stream = streams_[name];
  if (!stream) {
    try {
      keep_place_for_default(name);
      stream = device_->make_stream_with_priority(name, priority.value_or(0));
    } catch (...) {  // refused (a host device's max_streams): no empty entry left behind
      streams_.erase(name);
      throw;
    }
    stream_priorities_[name] = priority.value_or(0);
    return *stream;
  }
  // The priority asked for, not the stream's: cuda clamps it to the device's range.
  if (const int made = stream_priorities_[name]; priority && *priority != made)
    throw std::invalid_argument("Runtime: stream '" + name + "' was made with priority " +
                                std::to_string(made) + ", now asked for with priority " +
                                std::to_string(*priority) +
                                " (a stream's priority is fixed when it is made: make the "
                                "pipeline whose plan sets it before using the stream)");
  return *stream;
}

Runtime::Sleep::~Sleep() {
  // Nothing may call into it once it goes: a stop running now on another thread is waited
  // for (std::stop_callback's destructor); a timer not fired is disarmed (TimerQueue::cancel
  // waits for one whose callback runs).
  on_signal_.reset();
  on_token_.reset();
  if (runtime_.sim_ != nullptr) {
    runtime_.sim_->cancel_at(*this);
  } else if (timer_ != 0) {
    runtime_.timers().cancel(timer_);
  }
}

bool Runtime::Sleep::arm(const StopSignal* signal) {
  signal_ = signal;
  if (signal_ != nullptr && signal_->stop_requested()) {
    why_ = signal_->reason();
    return false;
  }
  if (token_.stop_requested()) {
    why_ = "sleep stopped";
    return false;
  }
  if (runtime_.now() >= deadline_) return false;
  if (runtime_.sim_ != nullptr) {
    runtime_.sim_->post_at(deadline_, *this);
  } else {
    timer_ = runtime_.timers().schedule(deadline_, [this] { end({}); });
  }
  // A stop that fires while these register (or the timer, at a deadline this close) ends
  // the sleep in state `arming`: it resumes nothing, and the coroutine goes on from here.
  if (signal_ != nullptr) on_signal_.emplace(signal_->token(), OnStop{this});
  if (token_.stop_possible()) on_token_.emplace(token_, OnStop{this});
  int expected = arming;
  if (state_.compare_exchange_strong(expected, suspended, std::memory_order_acq_rel)) return true;
  // It ended meanwhile: the winner is writing why_ (a few instructions), then the coroutine
  // goes on from here.
  while (state_.load(std::memory_order_acquire) != ended) std::this_thread::yield();
  return false;
}

void Runtime::Sleep::stop() noexcept {
  std::string why = "cancelled";
  try {
    why = signal_ != nullptr && signal_->stop_requested() ? signal_->reason() : "sleep stopped";
  } catch (...) {
    // Without memory for the reason the sleep still ends, as plainly cancelled.
  }
  end(std::move(why));
}

void Runtime::Sleep::end(std::string why) noexcept {
  int state = state_.load(std::memory_order_acquire);
  do {
    if (state >= ending) return;  // the other one came first
  } while (!state_.compare_exchange_weak(state, ending, std::memory_order_acq_rel));
  why_ = std::move(why);
  state_.store(ended, std::memory_order_release);
  if (state == suspended) resume_on(resumer_, handle_);
}

void Runtime::Sleep::await_resume() const {
  if (!why_.empty()) throw Cancelled(why_);
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
