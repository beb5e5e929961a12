#pragma once
// NCCL's and CUDA's C APIs as the NCCL backend calls them (libswp-nccl's private header): the
// library's types and reductions in NCCL's terms, their errors as CommError, where a pointer
// lives, a communicator's state for detail::settle, and the staging pools' blocks.

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "swp/comm/communicator.hpp"
#include "swp/comm/nccl/nccl_communicator.hpp"

namespace swp::detail {

using SteadyClock = std::chrono::steady_clock;

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId::bytes));

inline ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::u8:
      return ncclUint8;
    case DataType::i32:
      return ncclInt32;
    case DataType::i64:
      return ncclInt64;
    case DataType::f32:
      return ncclFloat32;
    case DataType::f64:
      return ncclFloat64;
  }
  return ncclUint8;
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::prod:
      return ncclProd;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

inline void check_nccl(ncclResult_t rc, int rank, const std::string& op, const std::string& doing) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  throw CommError(rank, op, doing + " failed: " + ncclGetErrorString(rc));
}

inline void check_cuda(cudaError_t rc, int rank, const std::string& op, const std::string& doing) {
  if (rc == cudaSuccess) return;
  throw CommError(rank, op, doing + " failed: " + cudaGetErrorString(rc));
}

inline bool on_device(const void* p) {
  if (p == nullptr) return true;  // nothing to stage
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // an unregistered host pointer on older runtimes: clear the error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// detail::settle's query for `comm`: its state (ncclCommGetAsyncError).
inline auto state_of(ncclComm_t comm) {
  return [comm](ncclResult_t* state) { return ncclCommGetAsyncError(comm, state); };
}

// The staging pools' blocks: page-locked host memory (the GPU copies results into it) and
// device memory (host buffers' device side). Made on the calling thread's device, which the
// communicator's calls set first.
inline void* pinned_block(std::size_t bytes) {
  void* p = nullptr;
  if (const cudaError_t rc = cudaMallocHost(&p, bytes); rc != cudaSuccess)
    throw std::runtime_error("cudaMallocHost of " + std::to_string(bytes) +
                             " bytes failed: " + cudaGetErrorString(rc));
  return p;
}

inline void* device_block(std::size_t bytes) {
  void* p = nullptr;
  if (const cudaError_t rc = cudaMalloc(&p, bytes); rc != cudaSuccess)
    throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) +
                             " bytes failed: " + cudaGetErrorString(rc));
  return p;
}

}  // namespace swp::detail
