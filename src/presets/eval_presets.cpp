// The eval pipelines of seed 000: no ZeroGrad, Backward or OptimizerStep.

#include <stdexcept>

#include "factories.hpp"

namespace swp::presets::detail {

// Seed 000 gives EvalPipelineSparseDist's tasks without dependencies; they are the
// SparseDist chain minus training (without them the default-stream Forward could read the
// input dist's output before its stream produced it). H2D runs on the loader lane, TorchRec's
// DataLoadingThread, which asks for a thread of its own.
Preset eval_sparse_dist(const PresetOptions& options) {
  if (options.loader_lane.empty())
    throw std::invalid_argument("eval_sparse_dist: loader_lane must not be empty");
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy", false, options.loader_lane);
  add(plan, "InputDistStart", 1, "data_dist", true);
  add(plan, "InputDistWait", 1, "data_dist");
  add(plan, "WaitBatch", 1);
  add(plan, "Forward", 1);
  plan.intra_iter_deps = {{"InputDistStart", "H2D"},
                          {"InputDistWait", "InputDistStart"},
                          {"WaitBatch", "InputDistWait"},
                          {"Forward", "WaitBatch"}};
  plan.pipeline_depth = 2;
  auto preset = single_phase("eval_sparse_dist", std::move(plan));
  preset.dedicated_lanes.insert(options.loader_lane);
  return with_torchrec_stream_priorities(std::move(preset));
}

// Seed 000 describes EvalPipelineFusedSparseDist as FusedSparseDist with forward under
// no_grad: the fused plan without ZeroGrad, Backward and OptimizerStep, and so without the
// inter-iteration dependencies on them (no weight changes between batches).
Preset eval_fused_sparse_dist(const PresetOptions& options) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "InputDistStart", 1, "data_dist", true);
  add(plan, "InputDistWait", 1, "data_dist");
  add_emb_lookup(plan, options.emb_lookup_stream);
  add(plan, "WaitBatch", 2);
  add(plan, "Forward", 2);
  plan.intra_iter_deps = {{"InputDistStart", "H2D"},
                          {"InputDistWait", "InputDistStart"},
                          {"EmbLookup", "InputDistWait"},
                          {"WaitBatch", "InputDistWait"},
                          {"Forward", "EmbLookup"},
                          {"Forward", "WaitBatch"}};
  plan.pipeline_depth = 3;
  return with_torchrec_stream_priorities(single_phase("eval_fused_sparse_dist", std::move(plan)));
}

}  // namespace swp::presets::detail
