#include "swp/sim/rank_groups.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace swp {

namespace {

void check_size(const char* what, int size) {
  if (size < 1)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(size) +
                                " must be at least 1");
}

}  // namespace

RankGroups make_rank_groups(const ParallelConfig& c, int rank) {
  check_size("world size", c.world_size);
  check_size("tp size", c.tp_size);
  check_size("pp size", c.pp_size);
  check_size("dp size", c.dp_size);
  // Checked: three sizes up to INT_MAX can wrap int64 round to the world size (or to 0).
  std::int64_t product = 0;
  const bool wraps =
      __builtin_mul_overflow(static_cast<std::int64_t>(c.tp_size), c.pp_size, &product) ||
      __builtin_mul_overflow(product, c.dp_size, &product);
  if (wraps || product != c.world_size)
    throw std::invalid_argument("world size " + std::to_string(c.world_size) + " != tp " +
                                std::to_string(c.tp_size) + " x pp " + std::to_string(c.pp_size) +
                                " x dp " + std::to_string(c.dp_size) + " = " +
                                (wraps ? std::string("more than 2^63") : std::to_string(product)));
  if (rank < 0 || rank >= c.world_size)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not in 0.." +
                                std::to_string(c.world_size - 1));
  // Coordinates in the [DP, PP, EP=1, TP] layout, TP fastest.
  const int t = rank % c.tp_size;
  const int p = (rank / c.tp_size) % c.pp_size;
  const int d = rank / (c.tp_size * c.pp_size);
  const auto at = [&](int dd, int pp, int tt) { return (dd * c.pp_size + pp) * c.tp_size + tt; };
  RankGroups g;
  for (int i = 0; i < c.tp_size; ++i) g.tp.ranks.push_back(at(d, p, i));
  for (int i = 0; i < c.dp_size; ++i) g.dp.ranks.push_back(at(i, p, t));
  for (int i = 0; i < c.pp_size; ++i) g.pp.ranks.push_back(at(d, i, t));
  g.tp.rank_in_group = t;
  g.dp.rank_in_group = d;
  g.pp.rank_in_group = p;
  return g;
}

}  // namespace swp
