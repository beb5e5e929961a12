#include "swp/presets/preset_options.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "factories.hpp"

namespace swp::presets {

namespace {

// Each choice with its TorchRec name and the stream EmbLookup then runs on.
struct EmbChoice {
  EmbLookupStream choice;
  std::string_view name;
  std::string_view stream;
};
constexpr std::array<EmbChoice, 3> emb_choices{{
    {EmbLookupStream::data_dist, "data_dist", "data_dist"},
    {EmbLookupStream::new_stream, "new", "emb_lookup"},
    {EmbLookupStream::current, "current", "default"},
}};

const EmbChoice& find(EmbLookupStream choice) {
  for (const auto& c : emb_choices)
    if (c.choice == choice) return c;
  throw std::invalid_argument("unknown emb_lookup_stream choice");
}

}  // namespace

std::string_view emb_lookup_stream_name(EmbLookupStream choice) { return find(choice).name; }

EmbLookupStream parse_emb_lookup_stream(std::string_view name) {
  for (const auto& c : emb_choices)
    if (c.name == name) return c.choice;
  throw std::invalid_argument("emb_lookup_stream '" + std::string(name) +
                              "' is not one of data_dist, new, current");
}

std::string detail::emb_lookup_stream(EmbLookupStream choice) {
  return std::string(find(choice).stream);
}

}  // namespace swp::presets
