#pragma once
// Runtime: the scheduler, device backend, lanes and streams pipelines run on.

#include <atomic>
#include <chrono>
#include <coroutine>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/async/timer_queue.hpp"
#include "swp/device/backends.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/fast_paths.hpp"

namespace swp {

/// Which device backend (and with it which clock) a Runtime uses.
enum class Backend {
  host,  ///< real threads, host streams emulating device time with worker threads
  sim,   ///< one thread, virtual time, simulated streams: deterministic
  cuda,  ///< real threads, CUDA streams and events (where compiled in: SWP_HAVE_CUDA)
};

/// "host" / "sim" / "cuda". parse_backend returns false for anything else, and for a backend
/// this build does not have (swp::backend_compiled).
std::string_view backend_name(Backend backend);
bool parse_backend(std::string_view name, Backend& backend);

struct RuntimeOptions {
  /// The device backend a Runtime(RuntimeOptions) makes (swp::make_device); a Runtime given a
  /// device takes the backend from it.
  Backend backend = Backend::host;
  /// Background worker threads of the host scheduler (the thread waiting in a pipeline's
  /// progress() helps too). Ignored by sim.
  unsigned workers = ThreadPoolScheduler::default_workers();
  /// Lanes that get a thread of their own instead of running on the shared pool (e.g. a CUDA
  /// submission thread). Ignored by sim.
  std::set<std::string> dedicated_lanes = {};
  /// Called on every thread this runtime starts — pool workers, dedicated lanes' threads,
  /// host streams' threads, the timer thread — before it runs anything (see swp::ThreadStart): to
  /// set their priority or affinity. Not called for threads the runtime does not own (an
  /// AsioRuntime's io threads, a caller in progress()). Each of those threads first binds
  /// itself to the runtime's device (Device::bind_thread: cudaSetDevice on cuda), then calls
  /// this hook, so the hook may use the device too.
  ThreadStartHook on_thread_start = {};
  /// The engines' shortcuts (see swp::FastPaths) for every pipeline on this runtime; unset:
  /// FastPaths::from_environment() (SWP_FAST_PATHS, else all of them). The constructor throws
  /// std::invalid_argument, naming the variable, when SWP_FAST_PATHS does not parse.
  std::optional<FastPaths> fast_paths = {};
  /// The most streams the host backend's device has at once (HostDeviceOptions::max_streams):
  /// each host stream may run a thread of its own, so a plan with more streams than this is
  /// refused while its pipeline is constructed (swp::StreamLimitError, a std::length_error,
  /// naming the stream and the limit) instead of starting a thread per stream. Counts every
  /// stream the runtime made, "default" included (made on first use: by the engines' serial
  /// runs, synchronize() and run observers); one place is kept for "default" until it exists
  /// (see stream()), so a plan may name at most max_host_streams - 1 streams besides "default".
  /// Used by the constructors that make the device; a device given to the runtime brings its
  /// own limits, and sim and cuda start no thread per stream.
  std::size_t max_host_streams = default_max_host_streams;
};

/// Owns where pipelines run: a scheduler (thread pool or virtual time), a device, and the
/// lanes and streams named by plans, created on first use and shared by every pipeline on
/// this runtime. The device makes the streams and the engines' events; a device with virtual
/// time (sim) brings the scheduler too.
///
/// Example:
/// ```
/// swp::Runtime rt({.backend = swp::Backend::sim});
/// swp::ClockPipeline<Ctx> pipe(rt, plan);
/// swp::Runtime on_device(swp::make_device("host"), {.workers = 2});  // a device by name
/// ```
/// Embedded in an Asio service (lanes run as handlers on the caller's io_context): see
/// swp::AsioRuntime (swp/engine/asio_runtime.hpp), or equally
/// ```
/// swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
/// ```
class Runtime {
 public:
  /// A runtime on make_device(backend_name(options.backend)) (host: a HostDevice limited to
  /// options.max_host_streams streams); throws what make_device throws (std::invalid_argument
  /// for a backend this build lacks).
  explicit Runtime(RuntimeOptions options = {});
  /// A runtime on `device`: its streams are the device's, its scheduler the device's virtual
  /// time (sim) or a pool of `options.workers` threads; `options.backend` is ignored (a device
  /// of a backend swp does not name runs as host does: real time). Throws
  /// std::invalid_argument for a null device.
  explicit Runtime(std::unique_ptr<Device> device, RuntimeOptions options = {});
  /// A host runtime whose lanes run on `scheduler` (e.g. an AsioScheduler over the caller's
  /// executor) instead of a pool of its own; `options.workers` is then unused.
  /// The device is made as by Runtime(RuntimeOptions). Throws std::invalid_argument
  /// for a null scheduler or for options.backend == sim (the sim backend needs its own
  /// virtual-time scheduler).
  explicit Runtime(std::unique_ptr<Scheduler> scheduler, RuntimeOptions options = {});
  virtual ~Runtime();  // AsioRuntime derives from it
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  [[nodiscard]] Backend backend() const noexcept { return options_.backend; }
  /// The engines' shortcuts on this runtime (RuntimeOptions::fast_paths, resolved).
  [[nodiscard]] const FastPaths& fast_paths() const noexcept { return *options_.fast_paths; }
  [[nodiscard]] Scheduler& scheduler() noexcept { return *scheduler_; }
  [[nodiscard]] Device& device() noexcept { return *device_; }
  [[nodiscard]] Clock::time_point now() const { return scheduler_->now(); }
  /// Deadlines of asynchronous waits (its thread starts on first use).
  [[nodiscard]] TimerQueue& timers() noexcept { return timers_; }

  /// The lane called `name`, created on first use.
  Lane& lane(const std::string& name);
  /// The stream called `name`, created on first use (of priority 0).
  /// Errors: what the device's make_stream throws (host: swp::StreamLimitError past
  /// RuntimeOptions::max_host_streams). On a device with a stream limit
  /// (Device::streams_left), one place is kept for "default" while it does not exist: making
  /// another stream that would take the last place throws swp::StreamLimitError (a
  /// std::length_error, swp/device/stream_limit_error.hpp) naming the stream and saying the
  /// place is kept for 'default'. So a pipeline whose plan's streams cannot all coexist with
  /// "default" fails while it is constructed, and once it was constructed its serial runs,
  /// synchronize() and run observers always get "default". Streams made directly on device()
  /// (not through this runtime) may still take that place.
  Stream& stream(const std::string& name);
  /// The stream called `name`, created on first use with `priority` when given
  /// (Device::make_stream_with_priority; what the engines call with a plan's
  /// `stream_priority`). A stream's priority is fixed when it is made: asking for another
  /// priority than the one it was made with throws std::invalid_argument naming the stream and
  /// both priorities (make the pipeline whose plan sets it before using the stream elsewhere).
  /// The other errors, and the place kept for "default", as stream(name).
  Stream& stream(const std::string& name, std::optional<int> priority);

  /// Awaitable CPU work of `duration` in the current task: busy-spins on the host backend,
  /// occupies the task (and its lane) for that much virtual time on sim.
  class CpuWork;
  CpuWork cpu_work(Clock::duration duration);

  /// Awaitable pause of `duration` (until `deadline`) on this runtime's clock that holds no
  /// thread: on the host backend a timer of the runtime's timer thread resumes the awaiting
  /// coroutine (through its Resumer — in a task body, its lane); on sim it occupies virtual
  /// time. Unlike cpu_work it spins nothing, and it can be cancelled.
  /// Completion: once the time has come (at once for a duration <= 0, or a deadline past).
  /// Cancellation: the awaiting coroutine's stop signal — in a task body the run's
  /// (pipe.cancel(), a failure, a stop_token given to next(), async_progress's terminal
  /// cancellation) — and `token` each end the sleep early: the await then throws
  /// swp::Cancelled (the signal's reason, or "sleep stopped" for the token). A signal or
  /// token stopped before the await throws at once.
  /// Example (a task that waits for a rate limit, and stops with the run):
  /// `co_await scope.runtime().sleep_for(2ms);` or `co_await rt.sleep_for(1s, stop.get_token());`
  class Sleep;
  Sleep sleep_for(Clock::duration duration, std::stop_token token = {});
  Sleep sleep_until(Clock::time_point deadline, std::stop_token token = {});

 private:
  // What every thread this runtime starts runs first: the device's bind_thread, then the
  // caller's on_thread_start.
  void begin_runtime_thread(const ThreadStart& start) const;
  // Throws StreamLimitError when making stream `name` would take the device's last place
  // while "default" does not exist yet (under mutex_).
  void keep_place_for_default(const std::string& name) const;

  RuntimeOptions options_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Scheduler> own_scheduler_;  // none when the device brings virtual time
  Scheduler* scheduler_ = nullptr;
  SimScheduler* sim_ = nullptr;  // scheduler_ when the device runs on virtual time
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<ThreadPoolScheduler>> dedicated_;
  std::map<std::string, std::unique_ptr<Lane>> lanes_;
  // Pipelines cancel their timers before they go; its thread starts on first use, when
  // device_ is there to bind it.
  TimerQueue timers_{[this](const ThreadStart& start) { begin_runtime_thread(start); }};
  std::map<std::string, std::unique_ptr<Stream>> streams_;
  std::map<std::string, int> stream_priorities_;  // what each stream was made with (under mutex_)
};

class Runtime::CpuWork : private Runnable {
 public:
  CpuWork(Runtime& runtime, Clock::duration duration) : runtime_(runtime), duration_(duration) {}
  CpuWork(const CpuWork& o) : Runnable(), runtime_(o.runtime_), duration_(o.duration_) {}

  [[nodiscard]] bool await_ready() const;
  template <class Promise>
  void await_suspend(std::coroutine_handle<Promise> h) {
    handle_ = h;
    resumer_ = detail::resumer_of(h);
    runtime_.sim_->post_at(runtime_.sim_->now() + duration_, *this);
  }
  void await_resume() const noexcept {}

 private:
  void run() noexcept override { resume_on(resumer_, handle_); }

  Runtime& runtime_;
  Clock::duration duration_;
  std::coroutine_handle<> handle_;
  Resumer* resumer_ = nullptr;
};

inline Runtime::CpuWork Runtime::cpu_work(Clock::duration duration) {
  return CpuWork(*this, duration);
}

class Runtime::Sleep : private Runnable {
 public:
  Sleep(Runtime& runtime, Clock::time_point deadline, std::stop_token token)
      : runtime_(runtime), deadline_(deadline), token_(std::move(token)) {}
  Sleep(const Sleep&) = delete;
  Sleep& operator=(const Sleep&) = delete;
  ~Sleep();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    handle_ = h;
    resumer_ = detail::resumer_of(h);
    return arm(detail::stop_signal_of(h));
  }
  /// Throws swp::Cancelled when a stop ended the sleep.
  void await_resume() const;

 private:
  // Arms the timer and listens for the stops; false: nothing to wait for, or it ended while
  // being armed (the coroutine goes on at once).
  bool arm(const StopSignal* signal);
  // The timer fired (`why` empty) or a stop came (`why`: its reason): the first ends the
  // sleep, and resumes the coroutine unless it ended while being armed.
  void end(std::string why) noexcept;
  void run() noexcept override { end({}); }  // sim: virtual time reached the deadline
  void stop() noexcept;

  struct OnStop {
    Sleep* self;
    void operator()() const noexcept { self->stop(); }
  };
  // arming -> suspended (await_suspend returned true) -> ending (one end() won; it writes
  // why_) -> ended. An end while arming resumes nothing: the coroutine goes on at once.
  enum : int { arming = 0, suspended = 1, ending = 2, ended = 3 };

  Runtime& runtime_;
  Clock::time_point deadline_;
  std::stop_token token_;
  const StopSignal* signal_ = nullptr;
  std::coroutine_handle<> handle_;
  Resumer* resumer_ = nullptr;
  TimerQueue::Id timer_ = 0;  // host: the timer's id, until it fired or was disarmed
  std::atomic<int> state_{arming};
  std::string why_;  // what ended it early (written by the winner before the resume)
  std::optional<std::stop_callback<OnStop>> on_signal_, on_token_;
};

inline Runtime::Sleep Runtime::sleep_for(Clock::duration duration, std::stop_token token) {
  return Sleep(*this, now() + duration, std::move(token));
}
inline Runtime::Sleep Runtime::sleep_until(Clock::time_point deadline, std::stop_token token) {
  return Sleep(*this, deadline, std::move(token));
}

}  // namespace swp
