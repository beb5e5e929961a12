// A program using an installed swp's cuda backend: built with `pkg-config swp-cuda` (or meson's
// dependency('swp-cuda')) and -Wl,--as-needed by tools/consumer-build.sh. It registers the
// backend and selects it by name, as a program does. On a GPU it runs work on a CUDA stream;
// without one, making the device must fail with the CUDA call's error (the backend is there,
// the GPU is not). Exit 0 when so; otherwise one `error:` line and exit 1.

#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "swp/config.hpp"
#include "swp/device/backends.hpp"
#include "swp/device/cuda/cuda_device.hpp"
#include "swp/engine/runtime.hpp"

static_assert(SWP_HAVE_CUDA == 1,
              "swp-cuda is installed only where the cuda backend is compiled in");

int main() {
  using namespace std::chrono_literals;
  try {
    swp::register_cuda_backend();
    if (!swp::backend_compiled("cuda")) throw std::runtime_error("cuda is not registered");
    if (swp::CudaDevice::count() == 0) {
      try {
        (void)swp::make_device("cuda");
      } catch (const swp::CudaError& e) {
        std::printf("ok: swp-cuda consumer (no GPU here: %s)\n", e.what());
        return 0;
      }
      throw std::runtime_error("make_device(\"cuda\") made a device without a GPU");
    }
    swp::Runtime runtime({.backend = swp::Backend::cuda, .workers = 1});
    if (runtime.device().backend() != "cuda")
      throw std::runtime_error("the runtime is not on cuda");
    auto& stream = runtime.stream("work");
    stream.enqueue_work(100us);
    stream.synchronize();
    std::printf("ok: swp-cuda consumer on %d GPU(s)\n", swp::CudaDevice::count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
