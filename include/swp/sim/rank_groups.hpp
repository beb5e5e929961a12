#pragma once
// RankGroups: the tensor-, data- and pipeline-parallel groups of a global rank (seed 002,
// section 2.3).

#include <vector>

namespace swp {

/// The sizes of a deployment: world = dp · pp · tp (expert parallelism is 1 in this layout:
/// MoE groups keep their own global semantics, seed 2.9).
struct ParallelConfig {
  int world_size = 1;
  int tp_size = 1;
  int pp_size = 1;
  int dp_size = 1;
};

/// One group a rank belongs to: its members in rank order and the rank's position in it.
struct ParallelGroup {
  std::vector<int> ranks;
  int rank_in_group = 0;
  [[nodiscard]] int size() const noexcept { return static_cast<int>(ranks.size()); }
  friend bool operator==(const ParallelGroup&, const ParallelGroup&) = default;
};

/// The groups of one rank. Ranks are laid out as [DP, PP, EP(=1), TP], TP fastest:
/// rank = (d · pp + p) · tp + t. So a TP group is tp consecutive ranks of one stage, a PP group
/// the ranks of one (d, t) coordinate across stages (stride tp), a DP group the same (p, t)
/// across replicas (stride pp · tp). `pp.rank_in_group` is the rank's pipeline stage.
///
/// Example (the seed's): world 8, tp 2, pp 4, dp 1, rank 4 → pp group {0, 2, 4, 6}, rank in
/// group 2 (the third stage on TP lane 0); tp group {4, 5}; dp group {4}.
struct RankGroups {
  ParallelGroup tp;
  ParallelGroup dp;
  ParallelGroup pp;
};

/// The groups of `rank` under `config`. Throws std::invalid_argument when a size is < 1,
/// when world_size != tp · pp · dp (naming the four numbers), or when `rank` is outside
/// 0..world_size-1.
RankGroups make_rank_groups(const ParallelConfig& config, int rank);

}  // namespace swp
