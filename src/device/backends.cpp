#include "swp/device/backends.hpp"

#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "swp/config.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"

namespace swp {

namespace {

// The backends registered in this process. A deque, and never shrunk: compiled_backends()
// hands out views of the names, which must outlive any later registration.
struct Registry {
  std::mutex mutex;
  std::deque<DeviceBackend> backends;
};

// Constructed on first use: a backend library's static initializer may register before any
// of libswp's own namespace-scope objects would be, and the registry must already be there.
// Never destroyed: a program's static objects may make devices while the process exits, after
// a function-local static of libswp's would be gone (and the names compiled_backends() hands
// out live as long as the process).
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

// The backends swp ships as libraries of their own: how a program that lacks one gets it.
struct ShippedBackend {
  std::string_view name;
  bool installed;  // this installation has the library (swp/config.hpp)
  std::string_view library;
  std::string_view register_call;
};
constexpr ShippedBackend shipped[] = {
    {"cuda", SWP_HAVE_CUDA != 0, "swp-cuda", "swp::register_cuda_backend()"},
};

const DeviceBackend* find(std::string_view name) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const DeviceBackend& b : r.backends)
    if (b.name == name) return &b;  // stable: entries are never moved nor removed
  return nullptr;
}

std::string listed() {
  std::string have;
  for (std::string_view b : compiled_backends())
    have += (have.empty() ? "" : ", ") + std::string(b);
  return have;
}

}  // namespace

bool register_device_backend(DeviceBackend backend) {
  if (backend.name.empty() || !backend.make)
    throw std::invalid_argument("register_device_backend: a backend needs a name and a make");
  if (backend.name == "host" || backend.name == "sim")
    throw std::invalid_argument("register_device_backend: '" + backend.name +
                                "' is built into libswp");
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const DeviceBackend& b : r.backends)
    if (b.name == backend.name) return false;
  r.backends.push_back(std::move(backend));
  return true;
}

std::vector<std::string_view> compiled_backends() {
  std::vector<std::string_view> names{"host", "sim"};
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const DeviceBackend& b : r.backends) names.emplace_back(b.name);
  return names;
}

bool backend_compiled(std::string_view name) noexcept {
  return name == "host" || name == "sim" || find(name) != nullptr;
}

std::unique_ptr<Device> make_device(std::string_view name) {
  if (name == "host") return std::make_unique<HostDevice>();
  if (name == "sim") return std::make_unique<SimDevice>();
  if (const DeviceBackend* backend = find(name)) return backend->make();
  for (const ShippedBackend& s : shipped) {
    if (s.name != name) continue;
    if (!s.installed)
      throw std::invalid_argument("the " + std::string(name) +
                                  " device backend is not compiled into this build (backends "
                                  "in this build: " +
                                  listed() + "; configure swp with -D" + std::string(name) +
                                  "=enabled)");
    throw std::invalid_argument(
        "the " + std::string(name) + " device backend is not loaded in this program: link lib" +
        std::string(s.library) + " (pkg-config " + std::string(s.library) + ", meson dependency('" +
        std::string(s.library) + "')); where it is linked, the linker dropped it as unused: "
        "call " + std::string(s.register_call) + " (backends in this program: " + listed() + ")");
  }
  throw std::invalid_argument("unknown device backend '" + std::string(name) +
                              "' (backends in this build: " + listed() + ")");
}

std::shared_ptr<std::byte> pinned_host_memory(std::size_t bytes) {
  std::vector<const DeviceBackend*> with_memory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    for (const DeviceBackend& b : r.backends)
      if (b.pinned_memory) with_memory.push_back(&b);
  }
  // Outside the lock: an allocation may be slow (cudaMallocHost maps pages). A backend that
  // cannot give any (no GPU) is passed over; its error only says why none could.
  std::exception_ptr first_error;
  for (const DeviceBackend* b : with_memory) {
    try {
      if (auto memory = b->pinned_memory(bytes)) return memory;
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return nullptr;
}

}  // namespace swp
