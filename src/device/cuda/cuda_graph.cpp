#include "swp/device/cuda/cuda_graph.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda_check.hpp"
#include "swp/device/cuda/cuda_stream.hpp"

namespace swp {

CudaGraph::~CudaGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
}

void CudaGraph::run(CudaStream& stream, const std::function<void(CUstream_st*)>& launch) {
  cudaStream_t s = stream.native_handle();
  const std::string where = "stream '" + stream.name() + "'";
  if (exec_ != nullptr) {
    detail::cuda_check(cudaGraphLaunch(exec_, s), "cudaGraphLaunch", where);
    ++replays_;
    return;
  }
  if (eager_ < warmup_) {
    ++eager_;
    launch(s);
    return;
  }
  // Thread-local capture: launches from other threads (other lanes) are not taken in, and an
  // unsafe call from this thread ends the capture with an error instead of a wrong graph.
  detail::cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
                     "cudaStreamBeginCapture", where);
  cudaGraph_t graph = nullptr;
  try {
    launch(s);
  } catch (...) {
    (void)cudaStreamEndCapture(s, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  detail::cuda_check(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture", where);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  if (made != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    detail::cuda_check(made, "cudaGraphInstantiate", where);
  }
  graph_ = graph;
  exec_ = exec;
  // The capture only recorded the work: launch it for this run.
  detail::cuda_check(cudaGraphLaunch(exec_, s), "cudaGraphLaunch", where);
  ++replays_;
}

}  // namespace swp
