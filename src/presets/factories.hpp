#pragma once
// The preset factories behind make_preset, one per TorchRec pipeline of seed 000, and the
// small builder they share. Private to src/presets.

#include <string>

#include "swp/presets/preset.hpp"
#include "swp/presets/preset_options.hpp"

namespace swp::presets::detail {

/// Adds a task with no body and returns its name, so dependency lists read like the seed's.
inline std::string add(PipelinePlan& plan, std::string name, int stage,
                       std::string stream = "default", bool globally_ordered = false,
                       std::string lane = "default") {
  plan.add(PipelineTask{name}, TaskSchedule{.stage = stage,
                                            .stream = std::move(stream),
                                            .thread_group = std::move(lane),
                                            .globally_ordered = globally_ordered});
  return name;
}

/// A preset with one phase, its steady state.
inline Preset single_phase(std::string name, PipelinePlan plan) {
  Preset preset;
  preset.name = std::move(name);
  preset.phases.push_back(PresetPhase{"steady", std::move(plan), std::nullopt, {}});
  return preset;
}

/// TorchRec's TrainPipelineSparseDist makes its memcpy and data_dist streams at priority -1
/// (torchrec/distributed/train_pipeline/train_pipelines.py, TrainPipelineSparseDist.__init__:
/// `Stream(priority=-1)` for both), so that H2D copies and the input distribution overtake
/// forward and backward on the GPU; every pipeline seed 000's inheritance tree derives from it
/// inherits them. TrainPipelineBase's memcpy stream, the prefetch stream, a "new" emb_lookup
/// stream and StagedTrainPipeline's streams are made at the default priority (0).
inline constexpr int torchrec_copy_priority = -1;

/// Gives the tasks on the memcpy and data_dist streams of every phase of `preset` TorchRec's
/// priority for them (above): the SparseDist family's presets.
inline Preset with_torchrec_stream_priorities(Preset preset) {
  for (auto& phase : preset.phases)
    for (auto& t : phase.plan.tasks)
      if (t.schedule.stream == "memcpy" || t.schedule.stream == "data_dist")
        t.schedule.stream_priority = torchrec_copy_priority;
  return preset;
}

/// Adds the fused pipelines' EmbLookup at stage 2 on the stream named `emb_lookup` (what the
/// seed's table shows) and aliases that name as `choice` says: data_dist -> "data_dist",
/// current -> "default", new -> no alias (a stream of its own). Returns the task's name.
std::string add_emb_lookup(PipelinePlan& plan, EmbLookupStream choice);

Preset base(const PresetOptions& options);
Preset pt2(const PresetOptions& options);
Preset sparse_dist(const PresetOptions& options);
Preset sparse_dist_lite(const PresetOptions& options);
Preset fused_sparse_dist(const PresetOptions& options);
Preset semi_sync(const PresetOptions& options);
Preset prefetch_sparse_dist(const PresetOptions& options);
Preset sparse_dist_comp_autograd(const PresetOptions& options);
Preset eval_sparse_dist(const PresetOptions& options);
Preset eval_fused_sparse_dist(const PresetOptions& options);
Preset staged(const PresetOptions& options);

}  // namespace swp::presets::detail
