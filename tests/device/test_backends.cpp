#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "support/fake_backend.hpp"
#include "swp/config.hpp"
#include "swp/device/backends.hpp"
#include "swp/device/event.hpp"
#if SWP_HAVE_CUDA
#include "swp/device/cuda/cuda_device.hpp"
#endif

namespace test_backends {  // each test file's names apart (unity builds)

TEST_CASE("a device is made by backend name, and each one makes streams and events") {
  for (std::string_view name : swp::compiled_backends()) {
    CAPTURE(std::string(name));
    if (name == "cuda") continue;  // needs a GPU: tests/device/cuda
    CHECK(swp::backend_compiled(name));
    auto device = swp::make_device(name);
    REQUIRE(device != nullptr);
    CHECK(device->backend() == name);
    CHECK((device->virtual_time() != nullptr) == (name == "sim"));
    auto event = device->make_event();
    REQUIRE(event != nullptr);
    CHECK(event->native() == nullptr);  // host and sim events have no native handle
    auto stream = device->make_stream("s");
    const auto generation = stream->record(*event);
    stream->synchronize();
    CHECK(event->reached(generation));
  }
}

TEST_CASE("this build's backends are host and sim, and cuda exactly where it is compiled in") {
  auto names = swp::compiled_backends();
  // The tests' own backends (support/fake_backend.hpp) stay registered once a test made them.
  std::erase_if(names, [](std::string_view name) { return name.starts_with("test-"); });
  CHECK(names.size() == (SWP_HAVE_CUDA ? 3u : 2u));
  CHECK(names[0] == "host");
  CHECK(names[1] == "sim");
  CHECK(swp::backend_compiled("cuda") == static_cast<bool>(SWP_HAVE_CUDA));
  CHECK_FALSE(swp::backend_compiled("tpu"));
  CHECK_FALSE(swp::backend_compiled(""));
}

TEST_CASE("an unknown backend, or one this build lacks, is refused by name") {
  try {
    (void)swp::make_device("tpu");
    FAIL("make_device accepted 'tpu'");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("unknown device backend 'tpu'") != std::string::npos);
    CHECK(what.find("host, sim") != std::string::npos);
  }
#if !SWP_HAVE_CUDA
  CHECK_THROWS_WITH_AS(static_cast<void>(swp::make_device("cuda")),
                       doctest::Contains("the cuda device backend is not compiled into this build"),
                       std::invalid_argument);
#endif
}

TEST_CASE("a backend library registers by name: listed once, made by make_device") {
  static swp::test::FakeBackend fake{.name = "test-backends-registered"};
  (void)swp::test::register_fake_backend(fake);         // false where an earlier run registered it
  CHECK_FALSE(swp::test::register_fake_backend(fake));  // a library registers at load and on call
  CHECK(swp::backend_compiled(fake.name));
  const auto names = swp::compiled_backends();
  CHECK(std::count(names.begin(), names.end(), fake.name) == 1);
  CHECK(names[0] == "host");
  CHECK(names[1] == "sim");
  auto device = swp::make_device(fake.name);
  REQUIRE(device != nullptr);
  CHECK(device->backend() == fake.name);
#if SWP_HAVE_CUDA
  // This binary links libswp-cuda, which registered itself when it was loaded; the explicit
  // call (what a program linked with --as-needed relies on) changes nothing then.
  swp::register_cuda_backend();
  CHECK(std::count(names.begin(), names.end(), "cuda") == 1);
  CHECK(swp::compiled_backends().size() == names.size());
#endif
  const auto make = [] { return std::make_unique<swp::test::FakeDevice>("x"); };
  CHECK_THROWS_WITH_AS(swp::register_device_backend({.name = "host", .make = make}),
                       doctest::Contains("'host' is built into libswp"), std::invalid_argument);
  CHECK_THROWS_AS(swp::register_device_backend({.name = "", .make = make}), std::invalid_argument);
  CHECK_THROWS_AS(swp::register_device_backend({.name = "test-no-make", .make = {}}),
                  std::invalid_argument);
  CHECK_FALSE(swp::backend_compiled("test-no-make"));
}

TEST_CASE("page-locked host memory comes from a registered backend that has some") {
  static swp::test::FakeBackend fake{.name = "test-backends-pinned"};
  (void)swp::test::register_fake_backend(fake);
  SUBCASE("one that gives it") {
    fake.pinned_on = true;
    const int calls = fake.pinned_calls;
    const auto memory = swp::pinned_host_memory(10000);
    fake.pinned_on = false;
    REQUIRE(memory != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(memory.get()) % 4096 == 0);
    // The cuda backend, registered first, gives it where a GPU is; the fake otherwise.
    CHECK(fake.pinned_calls - calls == (swp::test::cuda_gives_pinned_memory() ? 0 : 1));
  }
  SUBCASE("none that can") {
    if (swp::test::cuda_gives_pinned_memory()) return;  // the GPU gives it
#if SWP_HAVE_CUDA
    // Without a GPU the cuda backend's error says why none could.
    CHECK_THROWS_AS((void)swp::pinned_host_memory(10000), swp::CudaError);
#else
    CHECK(swp::pinned_host_memory(10000) == nullptr);  // no backend has any: a CPU-only program
#endif
  }
}

}  // namespace test_backends
