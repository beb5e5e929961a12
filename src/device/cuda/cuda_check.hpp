#pragma once
// Turning a failed CUDA runtime call into a CudaError (private to src/device/cuda).

#include <cuda_runtime_api.h>

#include <string>

#include "swp/device/cuda/cuda_error.hpp"

namespace swp::detail {

/// Throws CudaError when `status` is an error: "<call> failed[ for <what>]: <string> (<name>)".
/// Clears CUDA's last error, so a later call does not report this one again.
inline void cuda_check(cudaError_t status, const char* call, const std::string& what = {}) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  std::string message = call;
  message += " failed";
  if (!what.empty()) message += " for " + what;
  message += ": ";
  message += cudaGetErrorString(status);
  message += " (";
  message += cudaGetErrorName(status);
  message += ")";
  throw CudaError(call, static_cast<int>(status), message);
}

}  // namespace swp::detail
