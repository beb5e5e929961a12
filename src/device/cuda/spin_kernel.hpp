#pragma once
// Synthetic device time on a CUDA stream (private to src/device/cuda; spin_kernel.cu).

#include <cstdint>

struct CUstream_st;

namespace swp::detail {

/// Launches a one-thread kernel on `stream` that spins on the GPU's global timer for `ns`
/// nanoseconds. Returns the launch's cudaError_t (as an int; 0: launched).
int launch_spin(CUstream_st* stream, std::uint64_t ns) noexcept;

/// Launches a kernel on `stream` that traps: a real device fault, sticky for the whole CUDA
/// context (Stream::enqueue_fault). Returns the launch's cudaError_t (as an int).
int launch_trap(CUstream_st* stream) noexcept;

}  // namespace swp::detail
