#include "swp/sim/stage_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace swp {

StagePlan StagePlan::uniform(int total_layers, int num_stages) {
  if (total_layers < 0)
    throw std::invalid_argument("layer count " + std::to_string(total_layers) + " is negative");
  if (num_stages < 1)
    throw std::invalid_argument("stage count " + std::to_string(num_stages) +
                                " must be at least 1");
  // ceil(L / S) in integers (int64: L + S - 1 passes INT_MAX for large L); the min() clamps
  // keep trailing stages inside the model.
  const std::int64_t per_stage =
      (static_cast<std::int64_t>(total_layers) + num_stages - 1) / num_stages;
  std::vector<StageInfo> stages;
  stages.reserve(static_cast<std::size_t>(num_stages));
  for (int s = 0; s < num_stages; ++s) {
    const auto start =
        std::min(static_cast<std::int64_t>(s) * per_stage, static_cast<std::int64_t>(total_layers));
    const auto end = std::min((static_cast<std::int64_t>(s) + 1) * per_stage,
                              static_cast<std::int64_t>(total_layers));
    stages.push_back(
        StageInfo{s, num_stages, static_cast<int>(start), static_cast<int>(end), total_layers});
  }
  return StagePlan(std::move(stages), total_layers);
}

StagePlan StagePlan::from_layer_counts(const std::vector<int>& layer_counts) {
  if (layer_counts.empty()) throw std::invalid_argument("a stage plan needs at least one stage");
  std::int64_t total = 0;
  for (std::size_t s = 0; s < layer_counts.size(); ++s) {
    if (layer_counts[s] < 0)
      throw std::invalid_argument("stage " + std::to_string(s) + " has a negative layer count (" +
                                  std::to_string(layer_counts[s]) + ")");
    total += layer_counts[s];
  }
  if (total > 1'000'000'000)
    throw std::invalid_argument("too many layers in the stage plan: " + std::to_string(total) +
                                " (at most 1000000000)");
  const int num_stages = static_cast<int>(layer_counts.size());
  std::vector<StageInfo> stages;
  int start = 0;
  for (int s = 0; s < num_stages; ++s) {
    const int end = start + layer_counts[static_cast<std::size_t>(s)];
    stages.push_back(StageInfo{s, num_stages, start, end, static_cast<int>(total)});
    start = end;
  }
  return StagePlan(std::move(stages), static_cast<int>(total));
}

const StageInfo& StagePlan::stage(int id) const {
  if (id < 0 || id >= num_stages())
    throw std::out_of_range("stage " + std::to_string(id) + " is not in 0.." +
                            std::to_string(num_stages() - 1));
  return stages_[static_cast<std::size_t>(id)];
}

const StageInfo& StagePlan::stage_of_layer(int layer) const {
  for (const auto& s : stages_)
    if (s.owns_layer(layer)) return s;
  throw std::out_of_range("layer " + std::to_string(layer) + " is not in 0.." +
                          std::to_string(total_layers_ - 1));
}

}  // namespace swp
