#pragma once
// CudaError: a failed CUDA runtime call, as an exception.

#include <stdexcept>
#include <string>

namespace swp {

/// Thrown by the cuda backend when a CUDA runtime call fails: names the call, CUDA's error
/// name and string, and what swp was doing (e.g. the stream).
///
/// Example: `catch (const swp::CudaError& e) { log(e.call(), e.code(), e.what()); }`
/// what(): "cudaStreamCreateWithPriority failed for stream 'h2d': out of memory
/// (cudaErrorMemoryAllocation)".
class CudaError : public std::runtime_error {
 public:
  CudaError(std::string call, int code, const std::string& message)
      : std::runtime_error(message), call_(std::move(call)), code_(code) {}

  /// The CUDA runtime function that failed, e.g. "cudaEventRecord".
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  /// Its cudaError_t, as an int (0 is never thrown).
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

}  // namespace swp
