// The spin kernel behind CudaStream::enqueue_work (compiled by nvcc; see spin_kernel.hpp).

#include <cuda_runtime.h>

#include "spin_kernel.hpp"

namespace swp::detail {

namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// The timer is read in a loop rather than slept on: the GPU is busy for the whole duration,
// as a kernel of that length would keep its stream busy.
__global__ void spin(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

// A device fault on purpose (Stream::enqueue_fault): the kernel traps, which CUDA reports
// as a sticky launch failure of the whole context.
__global__ void trap() { __trap(); }

}  // namespace

int launch_trap(CUstream_st* stream) noexcept {
  trap<<<1, 1, 0, stream>>>();
  return static_cast<int>(cudaGetLastError());
}

int launch_spin(CUstream_st* stream, std::uint64_t ns) noexcept {
  spin<<<1, 1, 0, stream>>>(ns);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace swp::detail
