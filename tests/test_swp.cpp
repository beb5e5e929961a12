#include "swp/swp.hpp"

#include <doctest/doctest.h>

namespace test_swp {  // each test file's names apart (unity builds)

// The umbrella stays light: no Asio (swp/asio.hpp has it) and no JSON library (plan JSON is
// read and written behind plan_json.hpp's functions). Every Asio header includes
// boost/asio/detail/config.hpp, every Boost.JSON header boost/json/detail/config.hpp.
#ifdef BOOST_ASIO_DETAIL_CONFIG_HPP
#error "swp/swp.hpp includes Boost.Asio"
#endif
#ifdef BOOST_JSON_DETAIL_CONFIG_HPP
#error "swp/swp.hpp includes Boost.JSON"
#endif

TEST_CASE("the umbrella header names every layer's main types") {
  static_assert(sizeof(swp::PipelinePlan) > 0);          // core
  static_assert(sizeof(swp::Lane) > 0);                  // async
  static_assert(sizeof(swp::Runtime) > 0);               // engine (and device through it)
  static_assert(sizeof(swp::ProfileOptions) > 0);         // tune
  static_assert(sizeof(swp::presets::PresetInfo) > 0);   // presets
  static_assert(sizeof(swp::TraceRecorder) > 0);         // trace
  CHECK(swp::validate([] {
          swp::PipelinePlan plan;
          plan.add({"A"});
          return plan;
        }()).size() == 1);
}

}  // namespace test_swp
