#include "swp/presets/preset_options.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

namespace test_preset_options {  // each test file's names apart (unity builds)

namespace presets = swp::presets;

TEST_SUITE_BEGIN("presets");

TEST_CASE("emb_lookup_stream choices have TorchRec's names both ways") {
  for (auto c : {presets::EmbLookupStream::data_dist, presets::EmbLookupStream::new_stream,
                 presets::EmbLookupStream::current})
    CHECK(presets::parse_emb_lookup_stream(presets::emb_lookup_stream_name(c)) == c);
  CHECK(presets::emb_lookup_stream_name(presets::EmbLookupStream::new_stream) == "new");
  CHECK_THROWS_WITH_AS(presets::parse_emb_lookup_stream("fresh"),
                       doctest::Contains("'fresh' is not one of data_dist, new, current"),
                       std::invalid_argument);
}

TEST_CASE("default options are TorchRec's defaults") {
  const presets::PresetOptions options;
  CHECK(options.emb_lookup_stream == presets::EmbLookupStream::data_dist);
  CHECK(options.start_batch == 900);
  CHECK(options.compile_on_iter == 3);
  CHECK(options.loader_lane == "loader");
  CHECK(options.stages.empty());
}

TEST_SUITE_END();

}  // namespace test_preset_options
