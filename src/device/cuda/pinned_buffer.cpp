#include "swp/device/cuda/pinned_buffer.hpp"

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"

namespace swp {

PinnedBuffer::PinnedBuffer(std::size_t bytes) : size_(bytes) {
  void* data = nullptr;
  if (bytes > 0)
    detail::cuda_check(cudaMallocHost(&data, bytes), "cudaMallocHost",
                       std::to_string(bytes) + " bytes of pinned memory");
  data_ = static_cast<std::byte*>(data);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
}

}  // namespace swp
