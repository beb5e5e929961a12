#pragma once
// CudaGraph: a stream's launches captured once into a CUDA graph and replayed (where
// SWP_HAVE_CUDA) — the C++ counterpart of the presets' PT2 / compiled-autograd options.

#include <cstdint>
#include <functional>

struct CUstream_st;     // what cudaStream_t points to
struct CUgraph_st;      // what cudaGraph_t points to
struct CUgraphExec_st;  // what cudaGraphExec_t points to

namespace swp {

class CudaStream;

/// Runs a group of launches eagerly `warmup` times (libraries such as cuBLAS pick and load their
/// kernels then), captures them into a CUDA graph on the next run, and from then on replays the
/// graph with one `cudaGraphLaunch` instead of launching each kernel.
///
/// The captured launches must be the same every time: same kernels, same arguments, same
/// pointers. A task whose buffers live in per-slot storage keeps one CudaGraph per context slot
/// (`graphs[ctx.iter_idx % slots]`). Launches that must see new arguments each iteration do not
/// belong in a graph. `launch` queues work on the raw stream it is given (kernels, cuBLAS,
/// cudaMemcpyAsync), not through the CudaStream's enqueue/record: those pair each host
/// function with an item the stream queued, which a replay would not queue again.
///
/// Completion: run() returns once the work is queued on `stream` (as the launches would).
/// Errors: CudaError from capture, instantiation or launch; a capture that fails (e.g. a
/// launch that synchronizes) is ended and reported, and the next run() tries again from the
/// eager path. Not thread-safe: one task (one lane) uses it.
/// Example (a task body):
/// ```
/// graphs[slot].run(*swp::as_cuda(scope.stream()), [&](CUstream_st* s) {
///   gather(table, ids, x, s); cublasSgemm(...);  // the same pointers every time for this slot
/// });
/// ```
class CudaGraph {
 public:
  explicit CudaGraph(int warmup = 2) noexcept : warmup_(warmup) {}
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Queues `launch`'s work on `stream`: eagerly, by capture, or by replay (see the class).
  void run(CudaStream& stream, const std::function<void(CUstream_st*)>& launch);

  /// Whether the graph is captured (later runs replay it).
  [[nodiscard]] bool captured() const noexcept { return exec_ != nullptr; }
  /// Runs so far that replayed the graph.
  [[nodiscard]] std::uint64_t replays() const noexcept { return replays_; }

 private:
  int warmup_;
  int eager_ = 0;
  CUgraph_st* graph_ = nullptr;
  CUgraphExec_st* exec_ = nullptr;
  std::uint64_t replays_ = 0;
};

}  // namespace swp
