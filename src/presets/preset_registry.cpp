#include "swp/presets/preset_registry.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "factories.hpp"
#include "swp/core/plan_graph.hpp"

namespace swp::presets {

namespace {

struct Entry {
  PresetInfo info;
  Preset (*make)(const PresetOptions&);
};

// Seed 000's numbering (1..11); descriptions are the seed's one-liners.
const std::array<Entry, 11> entries{{
    {{"base", "TrainPipelineBase", "2 stages: H2D of the next batch overlaps the optimizer"},
     detail::base},
    {{"pt2", "TrainPipelinePT2", "1 stage, no overlap: a compile step at compile_on_iter"},
     detail::pt2},
    {{"sparse_dist", "TrainPipelineSparseDist",
      "3 stages on 3 streams: H2D | input dist | forward/backward"},
     detail::sparse_dist},
    {{"sparse_dist_lite", "TrainPipelineSparseDistLite",
      "2 stages: input dist on the critical path, one batch less in memory"},
     detail::sparse_dist_lite},
    {{"fused_sparse_dist", "TrainPipelineFusedSparseDist",
      "3 stages: embedding lookup on its own stream overlaps the previous optimizer"},
     detail::fused_sparse_dist},
    {{"semi_sync", "TrainPipelineSemiSync",
      "4 stages: embedding lookup of the next batch overlaps forward (B-2 parameters)"},
     detail::semi_sync},
    {{"prefetch_sparse_dist", "PrefetchTrainPipelineSparseDist",
      "3 stages on 4 streams: embedding cache prefetch overlaps forward"},
     detail::prefetch_sparse_dist},
    {{"eval_sparse_dist", "EvalPipelineSparseDist",
      "eval, 2 stages: H2D on a background loader lane, no backward"},
     detail::eval_sparse_dist},
    {{"eval_fused_sparse_dist", "EvalPipelineFusedSparseDist",
      "eval, 3 stages: the fused pipeline without backward and optimizer"},
     detail::eval_fused_sparse_dist},
    {{"staged", "StagedTrainPipeline",
      "N user stages, each on its own stream, event-synchronized; training stays outside"},
     detail::staged},
    {{"sparse_dist_comp_autograd", "TrainPipelineSparseDistCompAutograd",
      "the sparse_dist plan, forward/backward under compiled autograd"},
     detail::sparse_dist_comp_autograd},
}};

const std::array<PresetInfo, 11> catalogue = [] {
  std::array<PresetInfo, 11> infos{};
  for (std::size_t i = 0; i < entries.size(); ++i) infos[i] = entries[i].info;
  return infos;
}();

std::string known_names() {
  std::string names;
  for (const auto& e : entries) names += (names.empty() ? "" : ", ") + std::string(e.info.name);
  return names;
}

}  // namespace

std::span<const PresetInfo> preset_catalogue() { return catalogue; }

Preset make_preset(std::string_view name, const PresetOptions& options) {
  for (const auto& e : entries) {
    if (e.info.name != name) continue;
    Preset preset = e.make(options);
    for (const auto& phase : preset.phases) validate(phase.plan);  // a bad option shows here
    return preset;
  }
  throw std::invalid_argument("unknown preset '" + std::string(name) + "'; the presets are " +
                              known_names());
}

}  // namespace swp::presets
