#pragma once
// StagePlan: how a decoder-only model's layers are split into pipeline-parallel stages
// (seed 002, section 2.4), and which non-layer modules each stage owns.

#include <cstdint>
#include <vector>

namespace swp {

/// One pipeline stage: the decoder layers [start_layer, end_layer) of a model of
/// `total_layers`, as stage `stage_id` of `num_stages`. Plain data (the seed's frozen
/// PipelineStageInfo); a trailing stage may own no layers when there are more stages than
/// layers.
struct StageInfo {
  int stage_id = 0;
  int num_stages = 1;
  int start_layer = 0;
  int end_layer = 0;  ///< exclusive
  int total_layers = 0;

  /// Pipeline parallelism is on: more than one stage.
  [[nodiscard]] bool enabled() const noexcept { return num_stages > 1; }
  [[nodiscard]] bool is_first() const noexcept { return stage_id == 0; }
  [[nodiscard]] bool is_last() const noexcept { return stage_id == num_stages - 1; }
  /// The number of decoder layers this stage runs (its active layers).
  [[nodiscard]] int layer_count() const noexcept { return end_layer - start_layer; }
  /// Whether decoder layer `layer` runs on this stage.
  [[nodiscard]] bool owns_layer(int layer) const noexcept {
    return layer >= start_layer && layer < end_layer;
  }
  /// Module ownership (seed 2.4.4): the embedding runs on the first stage (later stages take
  /// the upstream hidden states), the final norm and the LM head on the last.
  [[nodiscard]] bool has_embedding() const noexcept { return is_first(); }
  [[nodiscard]] bool has_final_norm() const noexcept { return is_last(); }
  [[nodiscard]] bool has_lm_head() const noexcept { return is_last(); }

  friend bool operator==(const StageInfo&, const StageInfo&) = default;
};

/// The stages of one pipeline replica, in order; stage i sends its hidden states to i + 1.
///
/// Example:
/// ```
/// auto plan = swp::StagePlan::uniform(10, 4);  // layers 0-3, 3-6, 6-9, 9-10
/// plan.stage(3).layer_count();                   // 1
/// ```
class StagePlan {
 public:
  /// The seed's uniform partition: layers_per_stage = ceil(L / S), stage s owns
  /// [min(s·lps, L), min((s+1)·lps, L)), so earlier stages get the ceil count and trailing
  /// stages may be empty. Throws std::invalid_argument naming the value when `total_layers`
  /// < 0 or `num_stages` < 1.
  static StagePlan uniform(int total_layers, int num_stages);

  /// An explicit (non-uniform) partition: stage s owns the next `layer_counts[s]` layers.
  /// Throws std::invalid_argument for no stages or a negative count (naming the stage).
  static StagePlan from_layer_counts(const std::vector<int>& layer_counts);

  [[nodiscard]] int num_stages() const noexcept { return static_cast<int>(stages_.size()); }
  [[nodiscard]] int total_layers() const noexcept { return total_layers_; }
  [[nodiscard]] const std::vector<StageInfo>& stages() const noexcept { return stages_; }
  /// Stage `id`; throws std::out_of_range naming `id` and the stage count.
  [[nodiscard]] const StageInfo& stage(int id) const;
  /// The stage that runs decoder layer `layer`; throws std::out_of_range for a layer outside
  /// 0..total_layers-1.
  [[nodiscard]] const StageInfo& stage_of_layer(int layer) const;

 private:
  explicit StagePlan(std::vector<StageInfo> stages, int total_layers)
      : stages_(std::move(stages)), total_layers_(total_layers) {}
  std::vector<StageInfo> stages_;
  int total_layers_ = 0;
};

}  // namespace swp
