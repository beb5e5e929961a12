#pragma once
// Stream: an ordered queue of device work, event records and event waits (a CUDA stream or
// its stand-in).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "swp/async/scheduler.hpp"
#include "swp/async/thread_start.hpp"
#include "swp/device/event.hpp"
#include "swp/device/work_tag.hpp"

namespace swp {

class SimScheduler;
class Stream;

/// One finished piece of device work, as a stream observed it (for traces and tests).
/// Times are the emulated device clock: start = max(enqueue time, previous end, awaited
/// events), end = start + duration.
struct DeviceWork {
  WorkTag tag;  ///< what the enqueuer said the work was: the task instance that queued it
  Clock::time_point start;
  Clock::time_point end;
};

/// Receives every finished work item of the streams it is attached to. Called on the stream's
/// thread; must be cheap and thread-safe.
class DeviceObserver {
 public:
  virtual void device_work(const Stream& stream, const DeviceWork& work) noexcept = 0;

 protected:
  ~DeviceObserver() = default;
};

/// An in-order device queue. Everything enqueued runs in enqueue order; nothing here blocks
/// the calling CPU thread except `synchronize`.
///
/// Example:
/// ```
/// stream.wait(h2d_event);                  // stream-ordered: later work waits for H2D
/// stream.enqueue_work(300us, WorkTag{.task = 2, .iter = 41});
/// stream.record(forward_event);            // completes when the work above is done
/// ```
class Stream {
 public:
  /// A stream called `name` of scheduling `priority` (see priority()).
  explicit Stream(std::string name, int priority = 0)
      : name_(std::move(name)), priority_(priority) {}
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The priority the stream was made with, CUDA's convention: lower numbers are served
  /// first where streams compete for one device, 0 is the default (TorchRec gives its copy
  /// streams -1). cuda: the CUDA stream's priority, clamped to the device's range; host and
  /// sim keep it without acting on it (each host stream has a thread of its own, each sim
  /// stream its own virtual device: nothing competes), so a plan's priorities can be checked
  /// there. Set by Device::make_stream_with_priority.
  [[nodiscard]] int priority() const noexcept { return priority_; }

  /// Queues synthetic device work lasting `duration`; observers see it with `tag`.
  virtual void enqueue_work(Clock::duration duration, WorkTag tag = {}) = 0;

  /// Queues `work` (a callable) to run in stream order, behind everything queued before it:
  /// on the host backend on the stream's own thread, taking as long as it runs; on sim when
  /// the stream reaches it in virtual time, followed by `modelled` of device time (the call
  /// itself takes none). Observers see it with `tag`, like enqueue_work.
  /// Completion: events recorded after it complete once it returned. Errors: an exception it
  /// throws is kept, the stream goes on with its later items (so nothing waiting on them
  /// hangs), and the next synchronize() rethrows the first one kept.
  /// Example: `stream.enqueue([&] { decode(batch); }, 200us);`
  virtual void enqueue(std::function<void()> work, Clock::duration modelled = {},
                       WorkTag tag = {}) = 0;

  /// Arms a new generation of `event`, queues its completion behind the work queued so far and
  /// returns the generation. On an idle stream the event completes at once.
  virtual std::uint64_t record(Event& event) = 0;

  /// Makes work queued after this call wait for `generation` of `event` (0: its latest armed
  /// generation). Waiting on an event recorded on this same stream, or on one already reached,
  /// queues nothing. The event must outlive the wait (the engines keep events in their slots).
  /// Errors: a backend with native events (cuda) throws std::invalid_argument, naming this
  /// stream, for an event another device's stream recorded and that is not reached yet.
  virtual void wait(const Event& event, std::uint64_t generation) = 0;
  void wait(const Event& event) { wait(event, 0); }


  /// Blocks (host) or drives virtual time (sim) until everything queued so far is done.
  /// Rethrows the first exception a callable queued with enqueue() threw since the last call;
  /// on a faulted stream throws its DeviceFault (every time: a fault is sticky).
  virtual void synchronize() = 0;

  /// The stream's device fault (a DeviceFault, or the backend's error on cuda), or nullptr
  /// while it is healthy. Sticky: once faulted, work queued on the stream no longer runs
  /// (callables included), every event it records completes failed (Event::error) instead of
  /// hanging, and a stream that waits on a failed event faults too. Any thread.
  [[nodiscard]] std::exception_ptr fault() const;
  [[nodiscard]] bool faulted() const noexcept { return faulted_.load(std::memory_order_acquire); }

  /// Emulates a device fault at this point of the stream — what a kernel that hits an illegal
  /// address does on a GPU: once the stream reaches it, it faults with DeviceFault(name(),
  /// what). For fault-injection tests of what runs on the streams. host and sim; cuda
  /// launches a kernel that traps, which breaks the whole CUDA context of the process (a
  /// real fault: for a test process of its own).
  /// Example: `stream.enqueue_fault("illegal address in kernel 'gather'");`
  virtual void enqueue_fault(std::string what) = 0;

  /// Attaches `observer` (nullptr detaches). A stream has one observer, and a Runtime's
  /// streams are shared by every pipeline on it, so attaching a different observer while one
  /// is attached throws std::logic_error naming the stream and both observers, changing
  /// nothing: detach the first, or attach one observer that passes the work on to both.
  /// Attaching the attached one again changes nothing. Set between runs, before work is
  /// queued: the stream's thread reads it without a lock.
  void set_observer(DeviceObserver* observer);
  /// The attached observer, or nullptr.
  [[nodiscard]] DeviceObserver* observer() const noexcept { return observer_; }

 protected:
  /// Makes the stream faulted with `error` (the first one stays); true for the first call.
  bool set_fault(std::exception_ptr error) noexcept;

  DeviceObserver* observer_ = nullptr;

 private:
  friend class Device;  // records the priority on streams of devices without priorities

  std::string name_;
  int priority_ = 0;
  mutable std::mutex fault_mutex_;
  std::exception_ptr fault_;  // under fault_mutex_
  std::atomic<bool> faulted_{false};
};

/// One backend's device: makes the streams and the events its work is ordered with.
///
/// Events: one type for every backend (swp::Event, the CPU's view: generations, waiters);
/// make_event gives it the backend's native handle where the backend has one (cuda: a
/// cudaEvent_t with timing disabled), so that recording and cross-stream waits stay on the
/// device. A plain `swp::Event` works with every backend too (cuda attaches its handle at the
/// first record, which then allocates once).
/// Example: `auto dev = swp::make_device("host"); auto s = dev->make_stream("h2d");`
class Device {
 public:
  Device() = default;
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  /// A new stream called `name`.
  virtual std::unique_ptr<Stream> make_stream(std::string name) = 0;
  /// A new stream called `name` of scheduling `priority` (lower numbers first, 0 the
  /// default: see Stream::priority()). What a Runtime makes a plan's streams with. cuda makes
  /// the CUDA stream with it (clamped to CudaDevice::priority_range()); this default, for
  /// devices without priorities (host, sim, a device of your own), makes make_stream(name)
  /// and records `priority` on it.
  virtual std::unique_ptr<Stream> make_stream_with_priority(std::string name, int priority) {
    auto stream = make_stream(std::move(name));
    stream->priority_ = priority;
    return stream;
  }
  /// A new event for this device's streams (errors: the backend's, e.g. CudaError).
  virtual std::unique_ptr<Event> make_event() { return std::make_unique<Event>(); }
  /// How many more streams make_stream makes now before it throws (host:
  /// HostDeviceOptions::max_streams less the streams there are), or nullopt for a device that
  /// sets no limit (sim, cuda, and a device of your own unless it overrides this). A Runtime
  /// asks it so that it can keep one place for its "default" stream (see Runtime::stream).
  /// Any thread.
  [[nodiscard]] virtual std::optional<std::size_t> streams_left() const noexcept {
    return std::nullopt;
  }
  /// "host", "sim" or "cuda".
  [[nodiscard]] virtual std::string_view backend() const noexcept = 0;
  /// The virtual-time scheduler this device's streams run on (sim), or nullptr: the device
  /// runs in real time, on whatever scheduler the runtime brings.
  [[nodiscard]] virtual SimScheduler* virtual_time() noexcept { return nullptr; }
  /// Threads this device starts for streams made from now on begin with begin_thread(…,
  /// hook) (host: one per stream, ThreadStart::Role::stream, started when the stream gets its
  /// first item — a stream nothing is queued on has no thread — and again with the next item
  /// after it left idle, HostDeviceOptions::idle_exit). Backends that start no threads
  /// for streams (sim; cuda, whose one poller thread binds itself to its GPU) ignore it. A
  /// Runtime passes its own hook here: bind_thread(), then RuntimeOptions::on_thread_start.
  virtual void on_thread_start(ThreadStartHook hook) { (void)hook; }
  /// Makes the calling thread work on this device: what every thread a Runtime starts (pool
  /// workers, dedicated lanes, the timer thread, host streams' threads) calls first, before
  /// RuntimeOptions::on_thread_start. cuda: cudaSetDevice(ordinal), so that task bodies'
  /// kernels and library calls land on this GPU, not on GPU 0 (a failure is left for the
  /// thread's first CUDA call to report: this runs where nothing can throw); host and sim:
  /// nothing.
  virtual void bind_thread() noexcept {}
};

}  // namespace swp
