// The cuda backend's registration with libswp: libswp links no CUDA, so make_device("cuda")
// and the loader's page-locked buffers reach this library only through its registry.

#include <memory>

#include "swp/device/backends.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/device/cuda/pinned_buffer.hpp"

namespace swp {

void register_cuda_backend() {
  (void)register_device_backend({
      .name = "cuda",
      .make = [] { return std::make_unique<CudaDevice>(); },
      .pinned_memory =
          [](std::size_t bytes) {
            auto buffer = std::make_shared<PinnedBuffer>(bytes);  // CudaError without a GPU
            return std::shared_ptr<std::byte>(buffer, buffer->data());
          },
  });
}

namespace {
// Registered as soon as the library is loaded: a program that links libswp-cuda and selects
// the backend by name needs no call. register_cuda_backend() covers a linker that dropped it.
[[maybe_unused]] const bool cuda_registered_at_load = (register_cuda_backend(), true);
}  // namespace

}  // namespace swp
