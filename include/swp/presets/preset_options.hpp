#pragma once
// PresetOptions: the knobs of the TorchRec pipelines of seed 000 that change their plans.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace swp::presets {

/// Where FusedSparseDist (and its eval variant) queues the embedding lookup, as TorchRec's
/// `emb_lookup_stream` argument. EmbLookup's stream is always named `emb_lookup` (the name
/// seed 000's table shows); the choice is the plan's stream alias for that name:
/// - `data_dist` (TorchRec's default): alias `emb_lookup -> data_dist`, the input-dist stream
///   is reused, no extra stream to reserve memory for;
/// - `new_stream` ("new"): no alias, `emb_lookup` is a stream of its own — the most overlap;
/// - `current`: alias `emb_lookup -> default`, which degrades to SparseDist (no overlap).
enum class EmbLookupStream { data_dist, new_stream, current };

/// "data_dist" / "new" / "current".
std::string_view emb_lookup_stream_name(EmbLookupStream choice);
/// Parses the names above; throws std::invalid_argument naming the value and the choices.
EmbLookupStream parse_emb_lookup_stream(std::string_view name);

/// One stage of StagedTrainPipeline (TorchRec `PipelineStage`): a task called `name` whose
/// body is bound by that name, queued on `stream` (empty: a stream of its own, named after the
/// stage, as TorchRec's `stream=Stream()`).
///
/// `fill_callback` runs once the pipeline has been filled (TorchRec runs it after the stage's
/// runnable while filling); `data_exhausted_callback` runs when the data source first comes
/// back empty. Both run on the thread driving the pipeline (see PresetRunner).
struct StageSpec {
  std::string name;
  std::string stream;
  std::function<void()> fill_callback = {};
  std::function<void()> data_exhausted_callback = {};
};

/// Options of the presets; each preset reads only the fields named after it, the others
/// ignore them.
///
/// Example: `make_preset("fused_sparse_dist", {.emb_lookup_stream = EmbLookupStream::new_stream})`.
struct PresetOptions {
  /// fused_sparse_dist, eval_fused_sparse_dist: the embedding lookup's stream.
  EmbLookupStream emb_lookup_stream = EmbLookupStream::data_dist;
  /// semi_sync: the first `start_batch` batches run the synchronous plan (TorchRec default 900).
  std::int64_t start_batch = 900;
  /// pt2: the 1-based iteration at which `compile` runs (TorchRec `compile_on_iter`, default 3).
  std::int64_t compile_on_iter = 3;
  /// pt2: the compile step (torch.compile in TorchRec); empty, PT2 stays the serial depth-1
  /// plan throughout. On the cuda backend, graph capture:
  /// `.compile = [&gpu] { gpu.replay_work_from_graphs(true); }` (swp::CudaDevice): the
  /// compiled phase replays its synthetic device work from CUDA graphs.
  std::function<void()> compile = {};
  /// eval_sparse_dist: the lane of the background H2D (TorchRec's DataLoadingThread).
  std::string loader_lane = "loader";
  /// staged: the user's stage list; empty gives seed 000's example (data_copy, gpu_postproc).
  std::vector<StageSpec> stages = {};
};

}  // namespace swp::presets
