#pragma once
// A device backend of the tests' own, registered by name the way a backend library registers
// itself (swp::register_device_backend): its devices are host devices under its name; its
// page-locked memory is plain 4 KiB-aligned memory, given only while `pinned_on` is set, so
// that no other test sees it. Names start with "test-".

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "swp/config.hpp"
#include "swp/device/backends.hpp"
#include "swp/device/host_device.hpp"
#if SWP_HAVE_CUDA
#include "swp/device/cuda/cuda_device.hpp"
#endif

namespace swp::test {

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(std::string name) : name_(std::move(name)) {}
  std::unique_ptr<Stream> make_stream(std::string name) override {
    return host_.make_stream(std::move(name));
  }
  std::unique_ptr<Event> make_event() override { return host_.make_event(); }
  [[nodiscard]] std::string_view backend() const noexcept override { return name_; }
  void on_thread_start(ThreadStartHook hook) override { host_.on_thread_start(std::move(hook)); }

 private:
  std::string name_;
  HostDevice host_;
};

/// One fake backend; a static of the test that registers it (the registry keeps using it).
struct FakeBackend {
  std::string name;
  std::atomic<bool> pinned_on{false};
  std::atomic<int> pinned_calls{0};
};

/// Registers `fake`; false where it already was (an earlier test in this process).
inline bool register_fake_backend(FakeBackend& fake) {
  return register_device_backend({
      .name = fake.name,
      .make = [&fake] { return std::make_unique<FakeDevice>(fake.name); },
      .pinned_memory = [&fake](std::size_t bytes) -> std::shared_ptr<std::byte> {
        if (!fake.pinned_on) return nullptr;
        fake.pinned_calls += 1;
        void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        if (p == nullptr) throw std::bad_alloc();
        return {static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); }};
      },
  });
}

/// Whether the cuda backend, registered before any fake (as libswp-cuda loads), gives
/// page-locked memory first here: it is in this test binary and a GPU is present.
inline bool cuda_gives_pinned_memory() {
#if SWP_HAVE_CUDA
  return CudaDevice::count() > 0;
#else
  return false;
#endif
}

}  // namespace swp::test
