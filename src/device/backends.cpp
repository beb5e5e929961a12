#include "swp/device/backends.hpp"

#include <stdexcept>
#include <string>

#include "swp/config.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"
#if SWP_HAVE_CUDA
#include "swp/device/cuda/cuda_device.hpp"
#endif

namespace swp {

std::vector<std::string_view> compiled_backends() {
  std::vector<std::string_view> names{"host", "sim"};
  if (SWP_HAVE_CUDA) names.emplace_back("cuda");
  return names;
}

bool backend_compiled(std::string_view name) noexcept {
  return name == "host" || name == "sim" || (SWP_HAVE_CUDA && name == "cuda");
}

std::unique_ptr<Device> make_device(std::string_view name) {
  if (name == "host") return std::make_unique<HostDevice>();
  if (name == "sim") return std::make_unique<SimDevice>();
#if SWP_HAVE_CUDA
  if (name == "cuda") return std::make_unique<CudaDevice>();
#endif
  std::string have;
  for (std::string_view b : compiled_backends())
    have += (have.empty() ? "" : ", ") + std::string(b);
  if (name == "cuda")
    throw std::invalid_argument(
        "the cuda device backend is not compiled into this build "
        "(backends in this build: " +
        have + ")");
  throw std::invalid_argument("unknown device backend '" + std::string(name) +
                              "' (backends in this build: " + have + ")");
}

}  // namespace swp
