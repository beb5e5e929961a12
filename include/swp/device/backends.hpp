#pragma once
// Device backends by name: what this build has, and making a device of one.

#include <memory>
#include <string_view>
#include <vector>

#include "swp/device/stream.hpp"

namespace swp {

/// The device backends this build has, in the order the CLI lists them: "host", "sim", and
/// "cuda" where the CUDA backend is compiled in (swp/config.hpp: SWP_HAVE_CUDA).
[[nodiscard]] std::vector<std::string_view> compiled_backends();

/// Whether `name` is one of compiled_backends().
[[nodiscard]] bool backend_compiled(std::string_view name) noexcept;

/// A new device of backend `name` (host, sim: one with its own virtual-time scheduler, cuda:
/// the current CUDA device).
///
/// Errors: std::invalid_argument naming `name` and the backends this build has, for an unknown
/// name or for "cuda" in a build without it; the backend's own errors otherwise (a CudaError
/// when there is no usable GPU).
/// Example: `swp::Runtime rt(swp::make_device("sim"));`
[[nodiscard]] std::unique_ptr<Device> make_device(std::string_view name);

}  // namespace swp
