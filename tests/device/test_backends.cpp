#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "swp/config.hpp"
#include "swp/device/backends.hpp"
#include "swp/device/event.hpp"

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
  const auto names = swp::compiled_backends();
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
  CHECK_THROWS_WITH_AS(swp::make_device("cuda"),
                       doctest::Contains("the cuda device backend is not compiled into this build"),
                       std::invalid_argument);
#endif
}

}  // namespace test_backends
