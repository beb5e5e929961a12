#include "swp/config.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "swp/engine/runtime.hpp"

namespace test_config {  // each test file's names apart (unity builds)

TEST_CASE("config.hpp carries the project's version") {
  // The version the top-level meson.build declares (and libswp's file name carries).
  std::ifstream in(SWP_SOURCE_DIR "/meson.build");
  std::stringstream text;
  text << in.rdbuf();
  const std::string meson = text.str();
  const std::string key = "version: '";
  const auto at = meson.find(key);
  REQUIRE(at != std::string::npos);
  const auto start = at + key.size();
  CHECK(std::string(SWP_VERSION) == meson.substr(start, meson.find('\'', start) - start));
}

TEST_CASE("config.hpp says a backend is compiled in only when the library has it") {
  // SWP_HAVE_* describe this libswp, not what meson found on the build machine: a program
  // that selects "cuda" because SWP_HAVE_CUDA is 1 must get a CUDA device.
  swp::Backend backend{};
  CHECK(swp::parse_backend("cuda", backend) == static_cast<bool>(SWP_HAVE_CUDA));
  // NCCL and NVTX are built on the CUDA backend.
  CHECK((SWP_HAVE_NCCL == 0 || SWP_HAVE_CUDA == 1));
  CHECK((SWP_HAVE_NVTX == 0 || SWP_HAVE_CUDA == 1));
}

}  // namespace test_config
