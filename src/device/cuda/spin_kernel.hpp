#pragma once
// Synthetic device time on a CUDA stream (private to src/device/cuda; spin_kernel.cu).

#include <cstdint>

struct CUstream_st;

namespace swp::detail {

/// Launches a one-thread kernel on `stream` that spins on the GPU's global timer for `ns`
/// nanoseconds. Returns the launch's cudaError_t (as an int; 0: launched).
int launch_spin(CUstream_st* stream, std::uint64_t ns) noexcept;

}  // namespace swp::detail
