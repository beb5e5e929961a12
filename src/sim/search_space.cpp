#include "swp/sim/search_space.hpp"

#include <algorithm>
#include <cstdint>

namespace swp {

namespace {

void check_devices(int num_devices) {
  if (num_devices < 1)
    throw std::invalid_argument("device count " + std::to_string(num_devices) +
                                " must be at least 1");
}

}  // namespace

std::vector<int> resolve_search_sizes(const std::optional<std::vector<int>>& sizes, int num_devices,
                                      int default_size, const std::string& flag) {
  check_devices(num_devices);
  if (!sizes) return {default_size};
  std::vector<int> out;
  if (sizes->empty()) {
    for (std::int64_t p = 1; p <= num_devices; p *= 2) out.push_back(static_cast<int>(p));
    return out;
  }
  for (int size : *sizes) {
    if (size < 1 || size > num_devices)
      throw std::invalid_argument(flag + " " + std::to_string(size) + " must be in 1.." +
                                  std::to_string(num_devices) + " (the device count)");
    if (std::find(out.begin(), out.end(), size) == out.end()) out.push_back(size);
  }
  return out;
}

std::vector<Candidate> search_candidates(int num_devices, const std::vector<int>& tp_sizes,
                                         const std::vector<int>& pp_sizes) {
  check_devices(num_devices);
  if (tp_sizes.empty() || pp_sizes.empty())
    throw SearchSpaceError(std::string("no ") + (tp_sizes.empty() ? "tp" : "pp") +
                           " sizes to search");
  std::vector<Candidate> out;
  std::string why;
  for (int tp : tp_sizes)
    for (int pp : pp_sizes) {
      if (tp < 1 || pp < 1)
        throw std::invalid_argument("tp " + std::to_string(tp) + " and pp " + std::to_string(pp) +
                                    " must be at least 1");
      const auto replica = static_cast<std::int64_t>(tp) * pp;
      if (num_devices % replica == 0) {
        out.push_back(Candidate{tp, pp, static_cast<int>(num_devices / replica)});
        continue;
      }
      why += (why.empty() ? "" : "; ") +
             ("tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) + ": " +
              std::to_string(num_devices) +
              " devices are not divisible by tp x pp = " + std::to_string(replica));
    }
  if (out.empty())
    throw SearchSpaceError("no tp x pp x dp = " + std::to_string(num_devices) +
                           " combination: " + why);
  return out;
}

}  // namespace swp
