// A program using an installed swp's NCCL communicator: built with `pkg-config swp-nccl` (or
// meson's dependency('swp-nccl')) by tools/consumer-build.sh. On a GPU it makes a one-GPU
// communicator and all-reduces on it; without one it only proves the program links and loads.
// Exit 0 when so; otherwise one `error:` line and exit 1.

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "swp/comm/nccl/nccl_communicator.hpp"
#include "swp/config.hpp"
#include "swp/device/cuda/cuda_device.hpp"

static_assert(SWP_HAVE_NCCL == 1, "swp-nccl is installed only where NCCL is compiled in");

int main() {
  try {
    if (swp::CudaDevice::count() == 0) {
      std::printf("ok: swp-nccl consumer loads (no GPU here to make a communicator)\n");
      return 0;
    }
    swp::CudaDevice gpu(0);
    swp::CudaDevice* const devices[] = {&gpu};
    const auto communicators = swp::NcclCommunicator::for_devices(devices);
    if (communicators.size() != 1 || communicators[0]->size() != 1)
      throw std::runtime_error("for_devices made the wrong communicators");
    std::printf("ok: swp-nccl consumer, a communicator of %d GPU\n", communicators[0]->size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
