#pragma once
// Stage-aware memory: the weights and the KV cache per token each pipeline stage holds, and
// the largest of them (seed 002, sections 2.5 and 2.6).

#include <cstdint>
#include <vector>

#include "swp/sim/stage_plan.hpp"

namespace swp {

/// The memory a model's parts take on one TP rank, in bytes. Per-layer vectors so that
/// unlike layers (dense and MoE) can differ; `uniform` builds the common case.
struct ModelMemory {
  std::vector<std::int64_t> layer_weight_bytes;        ///< one per decoder layer
  std::vector<std::int64_t> layer_kv_bytes_per_token;  ///< one per decoder layer
  std::int64_t embedding_bytes = 0;
  std::int64_t final_norm_bytes = 0;
  std::int64_t lm_head_bytes = 0;

  /// `layers` identical layers.
  static ModelMemory uniform(int layers, std::int64_t weight_bytes_per_layer,
                             std::int64_t kv_bytes_per_token_per_layer,
                             std::int64_t embedding_bytes, std::int64_t final_norm_bytes,
                             std::int64_t lm_head_bytes);
};

/// What one stage holds: its active layers' weights plus the edge modules it owns
/// (embedding on the first stage, norm and LM head on the last), and the KV cache per token
/// of its active layers only.
struct StageMemory {
  int stage_id = 0;
  std::int64_t weight_bytes = 0;
  std::int64_t kv_bytes_per_token = 0;
  friend bool operator==(const StageMemory&, const StageMemory&) = default;
};

/// Memory of every stage of `plan`. With one stage that is the whole model. Throws
/// std::invalid_argument when the model's layer vectors do not have plan.total_layers()
/// entries, a size is negative (naming the layer or module), or a stage's weights or KV bytes
/// per token add up past 64 bits (naming the stage and the layer or module that overflowed).
std::vector<StageMemory> stage_memory(const StagePlan& plan, const ModelMemory& model);

/// The per-rank peak the seed reports: the largest stage weights (pipeline_max_stage_weight_size)
/// and the largest stage KV cache for `tokens` cached tokens (max(stage_kv_cache_bytes)),
/// never the global sum. Throws like stage_memory, and for negative `tokens` or a stage's KV
/// cache for `tokens` past 64 bits (naming the stage), never a wrapped size.
struct StageMemoryPeak {
  std::int64_t max_stage_weight_bytes = 0;
  std::int64_t max_stage_kv_cache_bytes = 0;
};
StageMemoryPeak stage_memory_peak(const StagePlan& plan, const ModelMemory& model,
                                  std::int64_t tokens);

}  // namespace swp
