#include "swp/presets/preset_options.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "factories.hpp"

namespace swp::presets {

namespace {

// Each choice with its TorchRec name and the stream the `emb_lookup` stream name is an alias
// of (empty: none, `emb_lookup` is a stream of its own).
struct EmbChoice {
  EmbLookupStream choice;
  std::string_view name;
  std::string_view alias_of;
};
constexpr std::array<EmbChoice, 3> emb_choices{{
    {EmbLookupStream::data_dist, "data_dist", "data_dist"},
    {EmbLookupStream::new_stream, "new", ""},
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

std::string detail::add_emb_lookup(PipelinePlan& plan, EmbLookupStream choice) {
  const std::string stream = "emb_lookup";
  if (const auto target = find(choice).alias_of; !target.empty())
    plan.stream_aliases[stream] = std::string(target);
  return add(plan, "EmbLookup", 2, stream);
}

}  // namespace swp::presets
