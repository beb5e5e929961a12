#include "swp/sim/stage_memory.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace swp {

namespace {

void check_bytes(const std::string& what, std::int64_t bytes) {
  if (bytes < 0)
    throw std::invalid_argument(what + " size " + std::to_string(bytes) + " is negative");
}

// A stage's total, `what` of stage `stage`, grown by `part` (`named`: the layer or module it
// comes from): refused rather than wrapped when it leaves the 64 bits it is counted in.
void add_bytes(std::int64_t& total, std::int64_t part, int stage, const char* what,
               const std::string& named) {
  if (__builtin_add_overflow(total, part, &total))
    throw std::invalid_argument("stage " + std::to_string(stage) + " " + what +
                                " do not fit in 64 bits once " + named + " (" +
                                std::to_string(part) + ") is added: the sizes are too large");
}

}  // namespace

ModelMemory ModelMemory::uniform(int layers, std::int64_t weight_bytes_per_layer,
                                 std::int64_t kv_bytes_per_token_per_layer,
                                 std::int64_t embedding_bytes, std::int64_t final_norm_bytes,
                                 std::int64_t lm_head_bytes) {
  if (layers < 0)
    throw std::invalid_argument("layer count " + std::to_string(layers) + " is negative");
  const auto n = static_cast<std::size_t>(layers);
  return ModelMemory{std::vector<std::int64_t>(n, weight_bytes_per_layer),
                     std::vector<std::int64_t>(n, kv_bytes_per_token_per_layer), embedding_bytes,
                     final_norm_bytes, lm_head_bytes};
}

std::vector<StageMemory> stage_memory(const StagePlan& plan, const ModelMemory& model) {
  const auto layers = static_cast<std::size_t>(plan.total_layers());
  if (model.layer_weight_bytes.size() != layers || model.layer_kv_bytes_per_token.size() != layers)
    throw std::invalid_argument(
        "the model's per-layer sizes (" + std::to_string(model.layer_weight_bytes.size()) +
        " weights, " + std::to_string(model.layer_kv_bytes_per_token.size()) +
        " KV) do not match the stage plan's " + std::to_string(layers) + " layers");
  check_bytes("embedding", model.embedding_bytes);
  check_bytes("final norm", model.final_norm_bytes);
  check_bytes("lm_head", model.lm_head_bytes);
  for (std::size_t l = 0; l < layers; ++l) {
    check_bytes("layer " + std::to_string(l) + " weight", model.layer_weight_bytes[l]);
    check_bytes("layer " + std::to_string(l) + " KV cache", model.layer_kv_bytes_per_token[l]);
  }
  std::vector<StageMemory> out;
  for (const StageInfo& s : plan.stages()) {
    StageMemory m{s.stage_id, 0, 0};
    for (int l = s.start_layer; l < s.end_layer; ++l) {
      const auto layer = static_cast<std::size_t>(l);
      const std::string named = "layer " + std::to_string(l);
      add_bytes(m.weight_bytes, model.layer_weight_bytes[layer], s.stage_id, "weight bytes", named);
      add_bytes(m.kv_bytes_per_token, model.layer_kv_bytes_per_token[layer], s.stage_id,
                "KV cache bytes per token", named);
    }
    if (s.has_embedding())
      add_bytes(m.weight_bytes, model.embedding_bytes, s.stage_id, "weight bytes", "embedding");
    if (s.has_final_norm())
      add_bytes(m.weight_bytes, model.final_norm_bytes, s.stage_id, "weight bytes", "final norm");
    if (s.has_lm_head())
      add_bytes(m.weight_bytes, model.lm_head_bytes, s.stage_id, "weight bytes", "lm_head");
    out.push_back(m);
  }
  return out;
}

StageMemoryPeak stage_memory_peak(const StagePlan& plan, const ModelMemory& model,
                                  std::int64_t tokens) {
  if (tokens < 0)
    throw std::invalid_argument("token count " + std::to_string(tokens) + " is negative");
  StageMemoryPeak peak;
  for (const StageMemory& m : stage_memory(plan, model)) {
    peak.max_stage_weight_bytes = std::max(peak.max_stage_weight_bytes, m.weight_bytes);
    std::int64_t kv_cache = 0;
    if (__builtin_mul_overflow(m.kv_bytes_per_token, tokens, &kv_cache))
      throw std::invalid_argument("stage " + std::to_string(m.stage_id) + " KV cache for " +
                                  std::to_string(tokens) + " tokens (" +
                                  std::to_string(m.kv_bytes_per_token) +
                                  " bytes per token) does not fit in 64 bits");
    peak.max_stage_kv_cache_bytes = std::max(peak.max_stage_kv_cache_bytes, kv_cache);
  }
  return peak;
}

}  // namespace swp
