#pragma once
// swp-gpu-bench's parts beside the overhead benchmark (gpu_overhead.cpp runs them all): the
// priority check (gpu_priority.cpp) and seed 004's split on device buffers (gpu_split.cpp).

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace swp_bench::gpu {

/// Throws std::runtime_error naming `call` and CUDA's error unless `rc` is cudaSuccess.
inline void check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(rc));
}

/// Stream priorities on the GPU (issue 62): a plan's `stream_priority` reaches the CUDA stream
/// (`gpu_priority_plan_reaches_stream` 1 or 0; `gpu_priority_memcpy_stream`, the CUDA stream's
/// priority), and a copy kernel on the high-priority stream overtakes a long kernel of many
/// block waves on a low-priority one: the fraction of the long kernel's span at which the copy
/// ended (`gpu_priority_copy_end_fraction_high`; median of `rounds`), against the same copy on
/// a stream of the long kernel's priority (`gpu_priority_copy_end_fraction_same`).
void priority(int rounds);

/// What the split benchmark runs.
struct SplitOptions {
  int iters = 300;                       // timed iterations per size
  double forward_us = 2000;              // the compute stream's kernel per iteration
  std::vector<int> megabytes{1, 4, 16};  // ids per iteration
};

/// Seed 004's split on device buffers with a one-rank NCCL communicator (issue 62): a
/// training step of H2D (memcpy stream, priority -1), the input distribution
/// (InputDist::start_on_device on the data_dist stream, priority -1, NcclCompletion::submitted)
/// and a forward kernel that waits for the ids on the GPU (`co_await tensors.on(stream)`), run
/// by the data-flow engine. Per size: `gpu_split_<M>mb_us_per_iter`, `..._bound_us_per_iter`
/// (the busiest stream's device time per iteration, timed alone) and `..._efficiency` (bound /
/// pipelined; target >= 0.98). Where the nccl backend is not built it says so.
void split(const SplitOptions& options);

}  // namespace swp_bench::gpu
