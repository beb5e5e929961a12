#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "swp/config.hpp"
#include "swp/device/nvtx_ranges.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_nvtx_ranges {  // each test file's names apart (unity builds)

namespace {

std::string name_of(std::string_view task, std::int64_t iter, bool serial, bool skip,
                    std::size_t size = 128) {
  std::vector<char> buffer(size, 'x');
  const std::size_t n = swp::nvtx_range_name(buffer.data(), size, task, iter, serial, skip);
  if (size == 0) return {};
  CHECK(buffer[n] == '\0');
  CHECK(n == std::strlen(buffer.data()));
  return std::string(buffer.data(), n);
}

using Ctx = swp::IterContext<int>;

}  // namespace

TEST_CASE("NVTX ranges are named as in seed 003") {
  CHECK(name_of("Load", 12, false, false) == "SWP/Load/iter12");
  CHECK(name_of("Load", 0, true, false) == "SWP_serial/Load/iter0");
  CHECK(name_of("EmbLookup", 7, false, true) == "SWP/EmbLookup/iter7[skip]");
  CHECK(name_of("EmbLookup", 9223372036854775807, true, true) ==
        "SWP_serial/EmbLookup/iter9223372036854775807[skip]");
}

TEST_CASE("an NVTX range name that does not fit is cut short, terminated, never overrun") {
  CHECK(name_of("Load", 12, false, false, 8) == "SWP/Loa");
  CHECK(name_of("Load", 12, false, false, 1).empty());
  CHECK(name_of("Load", 12, false, false, 0).empty());
  const std::string long_task(300, 'T');
  CHECK(name_of(long_task, 1, false, true).size() == 127);
}

TEST_CASE("a pipeline emits NVTX ranges only where they are compiled in, and runs the same") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  std::vector<int> seen;
  auto load = plan.add("Load", [](Ctx& ctx) -> swp::Co<int> { co_return ctx.batch * 2; });
  plan.add(
      "Use", [load, &seen](Ctx& ctx) -> swp::Co<void> { seen.push_back(co_await ctx.get(load)); },
      {.stage = 1}, swp::reads(load));
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  CHECK(pipe.enable_nvtx() == swp::nvtx_compiled());
  CHECK(swp::nvtx_compiled() == static_cast<bool>(SWP_HAVE_NVTX));
  pipe.enable_shortcut("Load");  // its ranges say [skip]
  CHECK(pipe.run(std::vector<int>{1, 2, 3}).iterations == 3);
  pipe.run_one_serial_iter(4, 3);
  CHECK(seen == std::vector<int>{2, 2, 2, 2});  // the shortcut replays the first Load
  CHECK_FALSE(pipe.enable_nvtx(false));
  pipe.disable_shortcut();
  CHECK(pipe.run(std::vector<int>{5}).iterations == 1);
  CHECK(seen.back() == 10);
}

}  // namespace test_nvtx_ranges
