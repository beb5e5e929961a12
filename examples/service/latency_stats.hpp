#pragma once
// LatencyStats: latencies of one load level, and their percentiles.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace service {

/// Every sample kept (a level has at most a few hundred thousand), so the percentiles are
/// exact (nearest rank), not estimated from buckets.
class LatencyStats {
 public:
  void add(double us) {
    samples_.push_back(us);
    sorted_ = false;
  }
  void reserve(std::size_t n) { samples_.reserve(n); }
  [[nodiscard]] std::size_t count() const noexcept { return samples_.size(); }

  /// The nearest-rank `p`-th percentile (0 < p <= 100); 0 without samples.
  [[nodiscard]] double percentile(double p) {
    if (samples_.empty()) return 0;
    if (!sorted_) {
      std::sort(samples_.begin(), samples_.end());
      sorted_ = true;
    }
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * double(samples_.size())));
    return samples_[std::clamp<std::size_t>(rank, 1, samples_.size()) - 1];
  }

 private:
  std::vector<double> samples_;
  bool sorted_ = true;
};

}  // namespace service
