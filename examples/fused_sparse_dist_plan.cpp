// Flagship example: TorchRec's FusedSparseDist pipeline written as an swp plan (seed 003's
// end-to-end example): 9 tasks, 3 stages, 4 streams. It validates the plan, prints the order in
// which one period submits its tasks, the period x task schedule and the stage analysis, then
// shows what validation says about a plan that would deadlock.
//
// The task bodies are placeholders here: the engines that run them come with the async core.

#include <iostream>

#include "swp/swp.hpp"

namespace {

swp::PipelinePlan fused_sparse_dist() {
  auto body = [](auto&) {};  // a real program binds its H2D, input-dist, ... functions here
  swp::PipelinePlan plan;
  auto h2d = plan.add({"H2D", body}, {.stage = 0, .stream = "memcpy"});
  auto dist_start = plan.add({"InputDistStart", body},
                             {.stage = 1, .stream = "data_dist", .globally_ordered = true});
  auto dist_wait = plan.add({"InputDistWait", body}, {.stage = 1, .stream = "data_dist"});
  auto emb = plan.add({"EmbLookup", body}, {.stage = 2, .stream = "emb_lookup"});
  auto zero = plan.add({"ZeroGrad", body}, {.stage = 2});  // default stream, default lane
  auto wait = plan.add({"WaitBatch", body}, {.stage = 2});
  auto fwd = plan.add({"Forward", body}, {.stage = 2});
  auto bwd = plan.add({"Backward", body}, {.stage = 2});
  auto opt = plan.add({"OptimizerStep", body}, {.stage = 2});
  plan.intra_iter_deps = {
      {dist_start, h2d},        // cross-stage: memcpy -> data_dist
      {dist_wait, dist_start},  // same-stream ordering
      {emb, dist_wait},         // cross-stage: data_dist -> emb_lookup
      {fwd, emb},               // cross-stream: emb_lookup -> default
      {wait, zero},
      {fwd, wait},
      {bwd, fwd},
      {opt, bwd},
  };
  // EmbLookup(i) reads the embedding weights Backward(i-1) updated (fused TBE).
  plan.inter_iter_deps = {{emb, bwd}, {"Forward", "OptimizerStep"}};
  return plan;  // pipeline_depth is inferred: max(stage) + 1 = 3
}

}  // namespace

int main() {
  const auto graph = swp::validate(fused_sparse_dist());
  std::cout << "FusedSparseDist: " << graph.size() << " tasks, depth " << graph.depth() << "\n\n";

  std::cout << "Enqueue order of one period (ready-first):\n";
  for (swp::TaskIndex t : swp::enqueue_order(graph))
    std::cout << "  " << graph.name(t) << "  [stage " << graph.stage(t) << ", "
              << graph.stream(t) << "]\n";

  std::cout << "\nSchedule, 5 periods:\n" << swp::format_schedule(graph, 5) << '\n';
  std::cout << swp::format_stage_analysis(graph, swp::analyze_stages(graph)) << '\n';

  // Moving EmbLookup to stage 0 would make it wait for its own input distribution (stage 1) and
  // for Backward two stages away: both waits would fall into future periods and deadlock.
  // Validation names the tasks and the rules instead.
  auto broken = fused_sparse_dist();
  broken.tasks[3].schedule.stage = 0;
  try {
    swp::validate(broken);
  } catch (const swp::PlanError& e) {
    std::cout << "A broken variant is rejected:\n" << e.what() << '\n';
  }
}
