// A program that selects swp's cuda backend by name only: it includes no cuda header and uses
// no symbol of libswp-cuda, so a linker with --as-needed would drop the library, and with it
// the backend's registration, unless swp-cuda's link flags keep it (they do: pkg-config
// `swp-cuda`, meson's dependency('swp-cuda')). tools/consumer-build.sh builds it both ways with
// --as-needed. The backend must be there by name: on a GPU the device runs work; without one,
// making it fails with the CUDA error, not "not loaded". Exit 0 when so; otherwise one
// `error:` line and exit 1.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "swp/config.hpp"
#include "swp/device/backends.hpp"
#include "swp/engine/runtime.hpp"

static_assert(SWP_HAVE_CUDA == 1,
              "swp-cuda is installed only where the cuda backend is compiled in");

int main() {
  using namespace std::chrono_literals;
  try {
    const auto names = swp::compiled_backends();
    if (std::count(names.begin(), names.end(), "cuda") != 1)
      throw std::runtime_error("libswp-cuda is linked, but the cuda backend is not registered");
    std::unique_ptr<swp::Device> device;
    try {
      device = swp::make_device("cuda");
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("make_device(\"cuda\") refused the name: ") + e.what());
    } catch (const std::runtime_error& e) {  // a CudaError: no usable GPU here
      std::printf("ok: swp-cuda by name (no GPU here: %s)\n", e.what());
      return 0;
    }
    swp::Runtime runtime(std::move(device), {.workers = 1});
    auto& stream = runtime.stream("work");
    stream.enqueue_work(100us);
    stream.synchronize();
    std::printf("ok: swp-cuda by name, on the %s backend\n",
                std::string(runtime.device().backend()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
