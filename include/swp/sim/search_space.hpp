#pragma once
// The TP × PP × DP search space of a deployment on N devices (seed 002, section 2.2).

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace swp {

/// The sizes one search dimension tries (the seed's resolve_search_sizes):
/// - absent (nullopt): just `default_size` (PP's default is 1: searches keep pp = 1 unless
///   asked);
/// - given empty: every power of two <= num_devices (1, 2, 4, ...);
/// - given with values: those values, each a positive integer <= num_devices, duplicates
///   dropped, in the order given.
/// Throws std::invalid_argument naming `flag` and the value for a size < 1 or > num_devices,
/// and for num_devices < 1.
std::vector<int> resolve_search_sizes(const std::optional<std::vector<int>>& sizes, int num_devices,
                                      int default_size, const std::string& flag);

/// One deployment of the search: tp · pp · dp = num_devices.
struct Candidate {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  friend bool operator==(const Candidate&, const Candidate&) = default;
};

/// No combination of the sizes divides the devices; what() lists every combination tried
/// and why it failed ("tp=3 pp=2: 8 devices are not divisible by tp x pp = 6").
class SearchSpaceError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Every (tp, pp) with num_devices % (tp · pp) == 0, dp = num_devices / (tp · pp), tp major then
/// pp, in the order of the size lists. Combinations that do not divide are skipped; when none
/// is left, throws SearchSpaceError listing why each failed.
///
/// Example: `search_candidates(8, {1, 2}, {1, 2, 4})` → tp=1 pp=1 dp=8, tp=1 pp=2 dp=4, ...
std::vector<Candidate> search_candidates(int num_devices, const std::vector<int>& tp_sizes,
                                         const std::vector<int>& pp_sizes);

}  // namespace swp
