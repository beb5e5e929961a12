#include "swp/presets/recsys_costs.hpp"

#include <set>
#include <string>

namespace swp::presets {

void apply_recsys_costs(PipelinePlan& plan, const RecsysStep& step) {
  std::set<std::string> names;
  for (const auto& t : plan.tasks) names.insert(t.task.name);
  // Work a preset has no task for happens inside the task that does it there.
  const double dist_in_forward = names.count("InputDistStart") ? 0 : step.input_dist_us;
  const double emb_in_forward = names.count("EmbLookup") ? 0 : step.emb_lookup_us;
  const double emb_bwd_in_backward = names.count("EmbBackward") ? 0 : step.emb_bwd_us;

  for (auto& t : plan.tasks) {
    const std::string& n = t.task.name;
    double device = 0;
    if (n == "H2D" || n == "data_copy") device = step.h2d_us;
    else if (n == "gpu_postproc") device = step.postproc_us;
    else if (n == "InputDistStart" || n == "InputDistWait") device = step.input_dist_us / 2;
    else if (n == "EmbLookup") device = step.emb_lookup_us;
    else if (n == "EmbPrefetch") device = step.prefetch_us;
    else if (n == "ZeroGrad") device = step.zero_grad_us;
    else if (n == "Forward") device = step.dense_fwd_us + emb_in_forward + dist_in_forward;
    else if (n == "Backward") device = step.dense_bwd_us + emb_bwd_in_backward;
    else if (n == "EmbBackward") device = step.emb_bwd_us;
    else if (n == "OptimizerStep") device = step.optimizer_us;
    t.cost = SyntheticCost{.cpu_us = step.cpu_us, .device_us = device};
  }
}

}  // namespace swp::presets
