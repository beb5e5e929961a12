#pragma once
// CudaStream: a Stream on a CUDA stream (the cuda backend, where SWP_HAVE_CUDA).

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "swp/device/stream.hpp"

struct CUstream_st;  // what cudaStream_t points to
struct CUevent_st;   // what cudaEvent_t points to

namespace swp {

class CudaDevice;
class CudaGraph;

namespace detail {
struct StreamItem;
class CudaPoller;
}  // namespace detail

/// A CUDA stream with priority. Everything enqueued runs on the GPU in stream order:
/// - `enqueue_work(d)`: a one-thread kernel that spins on the GPU's global timer for `d`
///   (synthetic device time, as host streams sleep and sim streams model it); replayed from a
///   CUDA graph per duration once the device replays work from graphs
///   (CudaDevice::replay_work_from_graphs; the first use of a duration captures it, and the
///   capture assumes that no other thread queues work on this stream meanwhile: one lane per
///   stream, as the presets have);
/// - `enqueue(fn, modelled)`: `fn` as a host function in stream order (cudaLaunchHostFunc),
///   on CUDA's callback thread: it must not call CUDA (CUDA's rule) and should be short;
///   `modelled` is unused (sim only);
/// - `record(e)`: cudaEventRecord of one of `e`'s CUDA events; the device's poller (polling
///   mode, the default) or a host function after it (host_function mode) completes the
///   generation on the CPU side (Event::reached, waiters) once the GPU got there;
/// - `wait(e, g)`: cudaStreamWaitEvent on the CUDA event of generation g: the GPU waits, the
///   CPU does not. A generation is waited for through its own CUDA event as long as `e` was
///   recorded fewer than 4 times since (the engines wait right after the record).
///
/// Errors: CudaError from the call that failed; an exception `fn` threw is kept and the first
/// one rethrown by synchronize(), as on host streams. `wait` throws std::invalid_argument,
/// naming this stream, for an event of another device that is not reached yet.
/// Destruction synchronizes the stream (work still queued finishes) and destroys it.
/// Example (a task body launching its own kernel):
/// ```
/// if (swp::CudaStream* s = swp::as_cuda(scope.stream()))
///   my_kernel<<<grid, block, 0, s->native_handle()>>>(args);
/// ```
class CudaStream final : public Stream {
 public:
  CudaStream(const CudaDevice& device, std::string name, int priority);
  ~CudaStream() override;

  void enqueue_work(Clock::duration duration, WorkTag tag = {}) override;
  void enqueue(std::function<void()> work, Clock::duration modelled = {},
               WorkTag tag = {}) override;
  std::uint64_t record(Event& event) override;
  using Stream::wait;
  void wait(const Event& event, std::uint64_t generation) override;
  void synchronize() override;
  /// Launches a kernel that traps: a real fault of the whole CUDA context (see Stream).
  void enqueue_fault(std::string what) override;

  /// The cudaStream_t, for the caller's own kernels and library calls (cuBLAS, NCCL).
  [[nodiscard]] CUstream_st* native_handle() const noexcept { return stream_; }
  [[nodiscard]] const CudaDevice& device() const noexcept { return device_; }

  /// How many enqueue_work calls replayed a captured graph so far.
  [[nodiscard]] std::uint64_t graph_replays() const;

  /// Called on CUDA's callback thread by the host functions this stream enqueued, in order:
  /// every item in host_function mode, the callables (enqueue) in polling mode.
  void run_pending() noexcept;

  /// Polling mode, on the device's poller thread: completes the recorded generations (and the
  /// observers' work items) whose CUDA events completed, in order. `waiting`: an item is still
  /// queued (the GPU has not got there); `completed`: some item ran.
  struct PollResult {
    bool waiting = false;
    bool completed = false;
  };
  PollResult poll() noexcept;

 private:
  struct Pending;  // what the host functions do, in enqueue order (the .cpp's)

  // Queues `item` for a host function and enqueues that host function; nothing stays queued
  // when the launch fails (items and host functions stay one to one).
  void enqueue_host_function(detail::StreamItem&& item);

  // Polling mode: a pooled CUDA event recorded for the item just queued (after its work).
  CUevent_st* take_event();
  // What an item does once the GPU got there (run_pending's and poll()'s).
  void run_item(detail::StreamItem& item) noexcept;
  // The stream faulted with CUDA error `status` from `call` (kept as a CudaError).
  void fault_with(int status, const char* call) noexcept;
  // Faulted: the host-function items left never run; their records fail.
  void fail_pending() noexcept;
  // Host-function mode's poll(): looks for a fault while host functions are pending.
  PollResult watch_fault() noexcept;

  const CudaDevice& device_;
  detail::CudaPoller* poller_ = nullptr;  // the device's (polls, or watches for faults)
  bool polling_ = true;                   // CudaCompletion::polling
  CUstream_st* stream_ = nullptr;
  std::mutex mutex_;  // pending_, error_, last_end_
  std::unique_ptr<Pending> pending_;
  std::exception_ptr error_;
  Clock::time_point last_end_{};  // when the last observed work ended (for observers)
  std::mutex poll_mutex_;         // one poll() at a time (the poller's, or synchronize()'s)
  // Synthetic work replayed from graphs: one graph per duration (ns), at most max_graphs; a
  // duration past them launches the spin kernel as before (jittered costs do not fill memory).
  static constexpr std::size_t max_graphs = 64;
  mutable std::mutex graphs_mutex_;
  std::map<std::int64_t, std::unique_ptr<CudaGraph>> graphs_;
};

}  // namespace swp
