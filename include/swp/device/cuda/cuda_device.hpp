#pragma once
// CudaDevice: the cuda backend's device (where SWP_HAVE_CUDA): CUDA streams and events.

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "swp/device/cuda/cuda_error.hpp"
#include "swp/device/cuda/cuda_stream.hpp"
#include "swp/device/stream.hpp"

namespace swp {

namespace detail {
class CudaPoller;
}

/// How GPU completion (a recorded generation, the observers' work items) reaches the CPU side.
/// Neither blocks a thread on the GPU, and neither runs user code there: completing a
/// generation only signals (its waiters post to their schedulers). Callables queued with
/// Stream::enqueue are host functions in both modes: GPU work queued after one must wait for
/// it, which only a host function gives. tests and examples/cuda/gpu_train_step measure both
/// (`gpu_completion_latency_us_{host_function,polling}`, docs/gpu.md): polling is the default,
/// measured better on an H100 (completion 13–18 µs against 23–51 µs; the training step
/// pipelined at its bound against 0.71–0.76 of it).
enum class CudaCompletion {
  /// A host function per item (cudaLaunchHostFunc), run by CUDA's callback thread in stream
  /// order; the GPU stream waits for each host function to return.
  host_function,
  /// The default. A CUDA event recorded after each item, polled by one thread of the device's
  /// own with a bounded back-off (8 yields, then sleeps doubling from 1 to 64 µs while
  /// something is pending; parked otherwise). The GPU never waits for the CPU for a record;
  /// completion is seen up to one back-off late.
  polling,
};

/// One CUDA device (a GPU), making CUDA streams and events. No CUDA header is needed to use
/// it: native handles are the opaque `CUstream_st*` / `CUevent_st*` that cudaStream_t and
/// cudaEvent_t are.
///
/// Completion: GPU completion reaches the CPU through the device's poller thread (the default,
/// CudaCompletion::polling) or through host functions enqueued on the streams
/// (CudaCompletion::host_function, cudaLaunchHostFunc);
/// either only completes swp::Events (their waiters post to schedulers): user code never runs
/// on CUDA's callback thread, and no CPU thread blocks on the GPU except in
/// Stream::synchronize. Cross-stream waits stay on the GPU (cudaStreamWaitEvent).
/// Errors: CudaError for every failed CUDA call, naming the call and the stream.
/// Example:
/// ```
/// if (swp::CudaDevice::count() > 0) {
///   swp::Runtime rt(swp::make_device("cuda"));   // or std::make_unique<swp::CudaDevice>(0)
///   swp::DataFlowPipeline<Ctx> pipe(rt, plan, 4);
/// }
/// ```
class CudaDevice final : public Device {
 public:
  /// CUDA device `ordinal`, or the calling thread's current device for -1, completing GPU work
  /// on the CPU side as `completion` says. Throws CudaError when there is no such device (no
  /// GPU, no driver).
  explicit CudaDevice(int ordinal = -1, CudaCompletion completion = CudaCompletion::polling);
  ~CudaDevice() override;  // its streams are destroyed before it

  /// A stream of default priority.
  std::unique_ptr<Stream> make_stream(std::string name) override;
  /// A stream of `priority` (clamped to priority_range(); lower numbers run first).
  std::unique_ptr<CudaStream> make_stream(std::string name, int priority);
  /// The same, as a Device makes a plan's streams (Runtime::stream).
  std::unique_ptr<Stream> make_stream_with_priority(std::string name, int priority) override {
    return make_stream(std::move(name), priority);
  }
  /// An event with its CUDA events (timing disabled) made now, not at its first record.
  std::unique_ptr<Event> make_event() override;
  [[nodiscard]] std::string_view backend() const noexcept override { return "cuda"; }

  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  /// The device's stream priorities as (least, greatest): numerically greatest first.
  [[nodiscard]] std::pair<int, int> priority_range() const noexcept { return priorities_; }

  /// How many CUDA devices this process can use; 0 without a GPU or a driver (never throws).
  static int count() noexcept;

  /// Makes this device the calling thread's current CUDA device (kernels launch there).
  /// Throws CudaError when cudaSetDevice fails.
  void make_current() const;
  /// make_current() where nothing may throw: what a Runtime's threads call first.
  void bind_thread() noexcept override;

  /// From now on (`on`) or no longer, its streams queue synthetic device work
  /// (`enqueue_work(d)`, what synthetic task costs and `TaskScope::enqueue_work` queue) by
  /// replaying a CUDA graph — one per stream and duration, captured at its first use
  /// (swp::CudaGraph) — instead of launching the spin kernel: the presets' PT2 compile step on
  /// the cuda backend (`PresetOptions::compile`, see the example). Any thread; takes effect
  /// for work queued after it. Work that a task body launches itself is its own to capture
  /// (swp::CudaGraph).
  /// Example: `make_preset("pt2", {.compile = [&gpu] { gpu.replay_work_from_graphs(true); }})`.
  void replay_work_from_graphs(bool on) noexcept {
    replay_from_graphs_.store(on, std::memory_order_relaxed);
  }
  [[nodiscard]] bool replays_work_from_graphs() const noexcept {
    return replay_from_graphs_.load(std::memory_order_relaxed);
  }

  [[nodiscard]] CudaCompletion completion() const noexcept { return completion_; }
  /// The device's poller thread, where its streams register: it completes items in polling
  /// mode, and watches for device faults in host_function mode (a fault keeps the host
  /// functions behind it from running: the poller fails their events within 100 ms).
  [[nodiscard]] detail::CudaPoller* poller() const noexcept { return poller_.get(); }

 private:
  int ordinal_ = 0;
  std::pair<int, int> priorities_{0, 0};
  std::atomic<bool> replay_from_graphs_{false};
  CudaCompletion completion_ = CudaCompletion::polling;
  std::unique_ptr<detail::CudaPoller> poller_;
};

/// Registers the cuda backend with libswp (swp/device/backends.hpp): make_device("cuda"), the
/// Runtime's Backend::cuda and the CLI's `--backend cuda` find it, and the data loader's batch
/// buffers become page-locked where a GPU is there. libswp-cuda registers itself when it is
/// loaded, and its link flags (pkg-config `swp-cuda`, meson's dependency('swp-cuda')) keep it
/// linked under `--as-needed`, so a program selecting the backend by name needs no call. Call
/// this where a build links it some other way (a static libswp-cuda.a, whose registration a
/// linker keeps only when something references it; swp as a meson subproject; a build system
/// that reorders link flags)
/// or where a static initializer of the program's own selects the backend. Idempotent,
/// thread-safe, touches no GPU.
/// Example: `swp::register_cuda_backend(); swp::Runtime rt({.backend = swp::Backend::cuda});`
void register_cuda_backend();

/// The CUDA stream behind `stream` when it is one (a task body's `scope.stream()` on the cuda
/// backend), else nullptr: where a body launches its own kernels (`native_handle()`).
[[nodiscard]] CudaStream* as_cuda(Stream& stream) noexcept;

}  // namespace swp
