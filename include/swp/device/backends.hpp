#pragma once
// Device backends by name: the ones this program has (host and sim built in, the others
// registered by their own libraries), and making a device of one.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "swp/device/stream.hpp"

namespace swp {

/// What a backend library tells swp when it registers (libswp-cuda's
/// swp::register_cuda_backend()): libswp itself never links a backend, so the core finds one
/// only through this.
struct DeviceBackend {
  std::string name;  ///< what make_device() and the CLI's `--backend` take, e.g. "cuda"
  /// A new device of this backend (make_device(name)); the backend's own errors (CudaError).
  std::function<std::unique_ptr<Device>()> make;
  /// Optional: `bytes` of page-locked host memory, 4 KiB-aligned, whose copies to the device
  /// are asynchronous — the data loader's batch buffers (LoaderOptions::pinned). Throws where
  /// there is none to give (no GPU); the loader then uses plain memory.
  std::function<std::shared_ptr<std::byte>(std::size_t bytes)> pinned_memory = {};
};

/// Adds `backend` to this process's backends (compiled_backends(), make_device()). A backend
/// library calls it for itself, both from a static initializer and from its register
/// function, so registering a name again is expected: it keeps the first and returns false.
/// A backend stays registered for the life of the process: the library whose functions it
/// holds must never be unloaded (libswp-cuda is linked `-z nodelete`, so a dlclose() keeps it).
/// Thread-safe. Errors: std::invalid_argument for an empty name, no `make`, or "host"/"sim".
bool register_device_backend(DeviceBackend backend);

/// The device backends this program has, in the order the CLI lists them: "host", "sim", then
/// each registered one in registration order — "cuda" where libswp-cuda is linked and
/// registered (swp/device/cuda/cuda_device.hpp: swp::register_cuda_backend(); SWP_HAVE_CUDA in
/// swp/config.hpp says whether this installation has that library).
/// The views stay valid for the life of the process (a registered backend is never removed).
[[nodiscard]] std::vector<std::string_view> compiled_backends();

/// Whether `name` is one of compiled_backends().
[[nodiscard]] bool backend_compiled(std::string_view name) noexcept;

/// A new device of backend `name` (host, sim: one with its own virtual-time scheduler, cuda:
/// the current CUDA device).
///
/// Errors: std::invalid_argument naming `name` and the backends this program has, for an
/// unknown name; for a backend swp ships but this program lacks, it says how to get it
/// ("cuda": link libswp-cuda, pkg-config `swp-cuda`, and call swp::register_cuda_backend(); or,
/// where this installation has no cuda backend, that it is not compiled into this build).
/// The backend's own errors otherwise (a CudaError when there is no usable GPU).
/// Example: `swp::Runtime rt(swp::make_device("sim"));`
[[nodiscard]] std::unique_ptr<Device> make_device(std::string_view name);

/// `bytes` of page-locked host memory from the first registered backend that gives some, or
/// nullptr where no backend has such memory (a CPU-only program). Errors: where backends have
/// it but none could give it (no GPU), the first one's error.
[[nodiscard]] std::shared_ptr<std::byte> pinned_host_memory(std::size_t bytes);

}  // namespace swp
