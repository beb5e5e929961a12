#pragma once
// The GPU overhead benchmark's kernels (gpu_kernels.cu, through nvcc): plain C++ callers, no
// CUDA header needed.

#include <cstdint>

struct CUstream_st;

namespace swp_bench {

/// Launches one one-thread kernel on `stream` that writes the GPU's global timer (ns) to
/// stamps[0] as it starts, spins for `ns` (0: an empty kernel), and writes the timer to
/// stamps[1] as it ends. Returns the launch's cudaError_t as an int (0: launched).
int launch_stamped(CUstream_st* stream, std::uint64_t* stamps, std::uint64_t ns) noexcept;

/// Launches a one-thread kernel on `stream` that spins for `ns`, then stores `value` into
/// `*flag` (device-visible host memory, cudaHostAllocMapped) behind a system-wide fence: the
/// CPU sees the kernel's end within the time it takes to read the flag. Returns the launch's
/// cudaError_t as an int.
int launch_flagging(CUstream_st* stream, std::uint64_t ns, int* flag, int value) noexcept;

/// Launches `blocks` one-thread blocks on `stream`, each spinning for `ns`: a kernel that keeps
/// every SM busy for many waves of blocks (the low-priority work the priority check runs
/// beside). `span[0]` gets the earliest block start (atomicMin: set it to ~0 first), `span[1]`
/// the latest block end (atomicMax: set it to 0 first), GPU timer ns. Returns the launch's
/// cudaError_t as an int.
int launch_spin_grid(CUstream_st* stream, unsigned blocks, std::uint64_t ns,
                     std::uint64_t* span) noexcept;

/// Launches a copy kernel on `stream`: `n` int64 from `src` to `dst` (device memory) by
/// `blocks` blocks of 256 threads, the latest block's end written to `span[1]` (atomicMax) and
/// the earliest start to `span[0]` (atomicMin). A copy that needs SMs, as the input
/// distribution's permutes do: what a stream's priority decides. Returns the launch's
/// cudaError_t as an int.
int launch_copy(CUstream_st* stream, std::int64_t* dst, const std::int64_t* src, std::uint64_t n,
                unsigned blocks, std::uint64_t* span) noexcept;

}  // namespace swp_bench
