// StagedTrainPipeline: the user's stage list as a plan, one stage a task.

#include <stdexcept>

#include "factories.hpp"

namespace swp::presets::detail {

// Stage k runs on stage k and waits for stage k-1 of the same batch. Each stage has its own
// stream by default, so that dependency crosses streams and the engines realize it with an
// event recorded after stage k-1 and awaited by stage k's stream — TorchRec's event
// synchronization, not wait_stream. Forward, backward and optimizer stay in the user's loop.
Preset staged(const PresetOptions& options) {
  std::vector<StageSpec> stages = options.stages;
  if (stages.empty()) stages = {{"data_copy", ""}, {"gpu_postproc", ""}};  // seed 000's example
  PipelinePlan plan;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const StageSpec& s = stages[k];
    if (s.name.empty())
      throw std::invalid_argument("staged: stage " + std::to_string(k) + " has no name");
    add(plan, s.name, static_cast<int>(k), s.stream.empty() ? s.name : s.stream);
    if (k > 0) plan.intra_iter_deps.push_back({s.name, stages[k - 1].name});
  }
  plan.pipeline_depth = static_cast<int>(stages.size());
  auto preset = single_phase("staged", std::move(plan));

  std::vector<std::function<void()>> fill, exhausted;
  for (const auto& s : stages) {
    if (s.fill_callback) fill.push_back(s.fill_callback);
    if (s.data_exhausted_callback) exhausted.push_back(s.data_exhausted_callback);
  }
  // In stage order, as TorchRec walks its stage list.
  if (!fill.empty())
    preset.on_filled = [fill] {
      for (const auto& f : fill) f();
    };
  if (!exhausted.empty())
    preset.on_data_exhausted = [exhausted] {
      for (const auto& f : exhausted) f();
    };
  return preset;
}

}  // namespace swp::presets::detail
