// The GPU overhead benchmark's kernels (see gpu_kernels.hpp).

#include <cuda_runtime.h>

#include "gpu_kernels.hpp"

namespace swp_bench {

namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void stamped(std::uint64_t* stamps, std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  stamps[0] = start;
  while (global_ns() - start < ns) {
  }
  stamps[1] = global_ns();
}

__global__ void flagging(std::uint64_t ns, volatile int* flag, int value) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
  __threadfence_system();
  *flag = value;
}

__global__ void spin_grid(std::uint64_t ns, unsigned long long* span) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
  atomicMin(&span[0], static_cast<unsigned long long>(start));
  atomicMax(&span[1], static_cast<unsigned long long>(global_ns()));
}

__global__ void copy(std::int64_t* dst, const std::int64_t* src, std::uint64_t n,
                     unsigned long long* span) {
  const std::uint64_t start = global_ns();
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicMin(&span[0], static_cast<unsigned long long>(start));
    atomicMax(&span[1], static_cast<unsigned long long>(global_ns()));
  }
}

}  // namespace

int launch_spin_grid(CUstream_st* stream, unsigned blocks, std::uint64_t ns,
                     std::uint64_t* span) noexcept {
  spin_grid<<<blocks, 1, 0, stream>>>(ns, reinterpret_cast<unsigned long long*>(span));
  return static_cast<int>(cudaGetLastError());
}

int launch_copy(CUstream_st* stream, std::int64_t* dst, const std::int64_t* src, std::uint64_t n,
                unsigned blocks, std::uint64_t* span) noexcept {
  copy<<<blocks, 256, 0, stream>>>(dst, src, n, reinterpret_cast<unsigned long long*>(span));
  return static_cast<int>(cudaGetLastError());
}

int launch_stamped(CUstream_st* stream, std::uint64_t* stamps, std::uint64_t ns) noexcept {
  stamped<<<1, 1, 0, stream>>>(stamps, ns);
  return static_cast<int>(cudaGetLastError());
}

int launch_flagging(CUstream_st* stream, std::uint64_t ns, int* flag, int value) noexcept {
  flagging<<<1, 1, 0, stream>>>(ns, flag, value);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace swp_bench
