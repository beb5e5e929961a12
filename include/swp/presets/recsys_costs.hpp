#pragma once
// Synthetic costs shaped like one recommendation-model training step, laid onto any preset.

#include "swp/core/pipeline_plan.hpp"

namespace swp::presets {

/// Device and CPU time of the parts of one recsys training step, microseconds. The defaults
/// are made up but proportioned like a sharded DLRM step whose input distribution (the
/// splits and features all-to-all) is slow: the case the SparseDist pipelines exist for.
struct RecsysStep {
  double h2d_us = 300;          ///< batch copy to the device (staged: `data_copy`)
  double postproc_us = 200;     ///< GPU post-processing of the batch (staged: `gpu_postproc`)
  double input_dist_us = 600;   ///< input distribution (start + wait split evenly)
  double emb_lookup_us = 400;   ///< embedding lookup and output dist
  double prefetch_us = 200;     ///< embedding cache prefetch (Prefetch preset only)
  double dense_fwd_us = 500;    ///< dense forward
  double dense_bwd_us = 800;    ///< dense backward
  double emb_bwd_us = 300;      ///< embedding backward (fused TBE update)
  double optimizer_us = 250;    ///< optimizer step
  double zero_grad_us = 20;
  double cpu_us = 10;           ///< CPU launch cost of every task
};

/// Sets every task's SyntheticCost from `step`. A part the preset has no task for is folded
/// into the task that does that work there, as in the real pipelines: without input-dist
/// tasks (base, pt2) the input distribution runs inside Forward; without an EmbLookup task the
/// lookup runs inside Forward (PipelinedForward); without EmbBackward the embedding backward
/// runs inside Backward. Tasks the profile does not know (StagedTrainPipeline's user stages,
/// LoadBatch, InputTransform) get the CPU launch cost only, except seed 000's example stages
/// `data_copy` (H2D) and `gpu_postproc`.
///
/// Example: `auto p = make_preset("sparse_dist"); apply_recsys_costs(p.plan(), {});`
void apply_recsys_costs(PipelinePlan& plan, const RecsysStep& step = {});

}  // namespace swp::presets
