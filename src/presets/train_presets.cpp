// The training pipelines of seed 000 (TrainPipelineBase ... TrainPipelineSparseDistCompAutograd)
// transcribed from its SWPipeline plans: tasks, stages, streams and dependencies in the seed's
// order, so a preset serializes like the seed's plan files.

#include <stdexcept>
#include <string>

#include "factories.hpp"

namespace swp::presets::detail {

namespace {

// The stage-2 tail every SparseDist-derived training pipeline shares (seed: ZeroGrad →
// WaitBatch → Forward → Backward → OptimizerStep on the default stream).
void add_training_tail(PipelinePlan& plan, int stage) {
  add(plan, "ZeroGrad", stage);
  add(plan, "WaitBatch", stage);
  add(plan, "Forward", stage);
  add(plan, "Backward", stage);
  add(plan, "OptimizerStep", stage);
}

// swp's one addition to seed 000's training plans: ZeroGrad(i) waits for OptimizerStep(i-1).
// The seed leaves it to the clock's period order, where OptimizerStep(i-1) was submitted
// before ZeroGrad(i) is released anyway; a data-flow engine fires ZeroGrad(i) as soon as the
// iteration is admitted, and gradients of iteration i-1 would then survive into step i (or be
// zeroed before OptimizerStep(i-1) read them). The schedule tables do not change.
void guard_zero_grad(PipelinePlan& plan) {
  plan.inter_iter_deps.push_back({"ZeroGrad", "OptimizerStep"});
}

// SparseDist and CompAutograd: seed 000 gives CompAutograd the same plan without the
// globally_ordered flag on InputDistStart (one lane, so submission order is fixed anyway).
PipelinePlan sparse_dist_plan(bool ordered_input_dist) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "InputDistStart", 1, "data_dist", ordered_input_dist);
  add(plan, "InputDistWait", 1, "data_dist");
  add_training_tail(plan, 2);
  plan.intra_iter_deps = {
      {"InputDistStart", "H2D"},       // cross-stage: memcpy → data_dist
      {"InputDistWait", "InputDistStart"},
      {"WaitBatch", "InputDistWait"},  // cross-stage: data_dist → default
      {"Forward", "InputDistWait"},
      {"WaitBatch", "ZeroGrad"},
      {"Forward", "WaitBatch"},
      {"Backward", "Forward"},
      {"OptimizerStep", "Backward"},
  };
  plan.inter_iter_deps = {{"Forward", "OptimizerStep"}};  // Forward(i) reads Opt(i-1)'s weights
  guard_zero_grad(plan);
  plan.pipeline_depth = 3;
  return plan;
}

}  // namespace

Preset base(const PresetOptions&) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "ZeroGrad", 1);
  add(plan, "WaitBatch", 1);
  add(plan, "Forward", 1);
  add(plan, "Backward", 1);
  add(plan, "OptimizerStep", 1);
  plan.intra_iter_deps = {{"WaitBatch", "H2D"},
                          {"WaitBatch", "ZeroGrad"},
                          {"Forward", "WaitBatch"},
                          {"Backward", "Forward"},
                          {"OptimizerStep", "Backward"}};
  plan.inter_iter_deps = {{"Forward", "OptimizerStep"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 2;
  return single_phase("base", std::move(plan));
}

// Seed 000 lists PT2's tasks without dependencies; "fully serial" means program order, so
// they are chained as written (a data-flow engine would otherwise reorder them), and
// Forward(i) waits for OptimizerStep(i-1) like every other training pipeline.
Preset pt2(const PresetOptions& options) {
  if (options.compile_on_iter < 1)
    throw std::invalid_argument("pt2: compile_on_iter must be at least 1, got " +
                                std::to_string(options.compile_on_iter));
  PipelinePlan plan;
  const char* order[] = {"LoadBatch", "H2D",      "InputTransform", "ZeroGrad",
                         "Forward",   "Backward", "OptimizerStep"};
  for (const char* name : order) add(plan, name, 0);
  for (std::size_t i = 1; i < std::size(order); ++i)
    plan.intra_iter_deps.push_back({order[i], order[i - 1]});
  plan.inter_iter_deps = {{"Forward", "OptimizerStep"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 1;

  Preset preset;
  preset.name = "pt2";
  if (options.compile_on_iter > 1)
    preset.phases.push_back({"eager", plan, options.compile_on_iter - 1, {}});
  preset.phases.push_back({"compiled", std::move(plan), std::nullopt, options.compile});
  return preset;
}

Preset sparse_dist(const PresetOptions&) {
  return with_torchrec_stream_priorities(single_phase("sparse_dist", sparse_dist_plan(true)));
}

Preset sparse_dist_comp_autograd(const PresetOptions&) {
  return with_torchrec_stream_priorities(
      single_phase("sparse_dist_comp_autograd", sparse_dist_plan(false)));
}

Preset sparse_dist_lite(const PresetOptions&) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "ZeroGrad", 1);
  add(plan, "WaitBatch", 1);
  add(plan, "InputDistStart", 1);  // default stream: data_dist_stream is None
  add(plan, "InputDistWait", 1);
  add(plan, "Forward", 1);
  add(plan, "Backward", 1);
  add(plan, "OptimizerStep", 1);
  plan.intra_iter_deps = {{"WaitBatch", "H2D"},
                          {"WaitBatch", "ZeroGrad"},
                          {"InputDistStart", "WaitBatch"},
                          {"InputDistWait", "InputDistStart"},
                          {"Forward", "InputDistWait"},
                          {"Backward", "Forward"},
                          {"OptimizerStep", "Backward"}};
  plan.inter_iter_deps = {{"Forward", "OptimizerStep"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 2;
  return with_torchrec_stream_priorities(single_phase("sparse_dist_lite", std::move(plan)));
}

Preset fused_sparse_dist(const PresetOptions& options) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "InputDistStart", 1, "data_dist", true);
  add(plan, "InputDistWait", 1, "data_dist");
  add_emb_lookup(plan, options.emb_lookup_stream);
  add_training_tail(plan, 2);
  plan.intra_iter_deps = {
      {"InputDistStart", "H2D"},
      {"InputDistWait", "InputDistStart"},
      {"EmbLookup", "InputDistWait"},  // cross-stage: data_dist → emb_lookup
      {"Forward", "EmbLookup"},        // emb_lookup → default (one stream under `current`)
      {"WaitBatch", "ZeroGrad"},
      {"Forward", "WaitBatch"},
      {"Backward", "Forward"},
      {"OptimizerStep", "Backward"},
  };
  // Fused TBE updates embedding weights in Backward, so EmbLookup(i) needs Backward(i-1) only
  // and can overlap OptimizerStep(i-1).
  plan.inter_iter_deps = {{"EmbLookup", "Backward"}, {"Forward", "OptimizerStep"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 3;
  return with_torchrec_stream_priorities(single_phase("fused_sparse_dist", std::move(plan)));
}

// Semi-sync: Forward(i) should use the parameters of B-2, i.e. depend on OptimizerStep(i-2).
// swp's inter-iteration dependencies reach back one iteration only, and "must not see i-1's
// update" is no happens-before relation anyway, so that dependency is not in the plan: the
// staleness comes from the schedule (EmbLookup(i+1) is issued before Backward(i) is done).
// The synchronous warm-up plan adds EmbLookup(i) → OptimizerStep(i-1): every batch sees B-1.
Preset semi_sync(const PresetOptions& options) {
  if (options.start_batch < 0)
    throw std::invalid_argument("semi_sync: start_batch must not be negative, got " +
                                std::to_string(options.start_batch));
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "InputDistStart", 1, "data_dist", true);
  add(plan, "InputDistWait", 1, "data_dist");
  add(plan, "EmbLookup", 2);
  add(plan, "ZeroGrad", 3);
  add(plan, "Forward", 3);
  add(plan, "Backward", 3);
  add(plan, "EmbBackward", 3);
  add(plan, "OptimizerStep", 3);
  plan.intra_iter_deps = {
      {"InputDistStart", "H2D"},      {"InputDistWait", "InputDistStart"},
      {"EmbLookup", "InputDistWait"}, {"Forward", "EmbLookup"},
      {"Forward", "ZeroGrad"},        {"Backward", "Forward"},
      {"EmbBackward", "Backward"},    {"OptimizerStep", "EmbBackward"},
  };
  plan.inter_iter_deps = {{"EmbLookup", "Backward"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 4;

  Preset preset;
  preset.name = "semi_sync";
  if (options.start_batch > 0) {
    PipelinePlan sync = plan;
    sync.inter_iter_deps.push_back({"EmbLookup", "OptimizerStep"});
    preset.phases.push_back({"sync", std::move(sync), options.start_batch, {}});
  }
  preset.phases.push_back({"semi_sync", std::move(plan), std::nullopt, {}});
  return with_torchrec_stream_priorities(std::move(preset));
}

Preset prefetch_sparse_dist(const PresetOptions&) {
  PipelinePlan plan;
  add(plan, "H2D", 0, "memcpy");
  add(plan, "InputDistStart", 0, "data_dist", true);
  add(plan, "InputDistWait", 1, "data_dist");
  add(plan, "EmbPrefetch", 1, "prefetch");
  add_training_tail(plan, 2);
  plan.intra_iter_deps = {
      {"InputDistStart", "H2D"},        {"InputDistWait", "InputDistStart"},
      {"EmbPrefetch", "InputDistWait"}, {"WaitBatch", "EmbPrefetch"},
      {"WaitBatch", "ZeroGrad"},        {"Forward", "WaitBatch"},
      {"Backward", "Forward"},          {"OptimizerStep", "Backward"},
  };
  // EmbPrefetch(i) overwrites the cache Forward(i-1) reads: across streams, so it is declared.
  plan.inter_iter_deps = {{"EmbPrefetch", "Forward"}, {"Forward", "OptimizerStep"}};
  guard_zero_grad(plan);
  plan.pipeline_depth = 3;
  return with_torchrec_stream_priorities(single_phase("prefetch_sparse_dist", std::move(plan)));
}

}  // namespace swp::presets::detail
