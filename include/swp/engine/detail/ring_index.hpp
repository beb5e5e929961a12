#pragma once
// RingIndex: an iteration's entry in a ring whose size is fixed at construction (sync entries,
// context slots), i % n without a division.

#include <cstddef>
#include <cstdint>

namespace swp::detail {

/// The engines map iterations to ring entries several times per task, where a 64-bit division
/// costs tens of cycles. With M = ⌊(2^64 − 1) / n⌋, q = ⌊i · M / 2^64⌋ is ⌊i / n⌋ or one less
/// for every 0 ≤ i < 2^63: i/n − i·M/2^64 < i · (1 + 1/n) / 2^64 < 3/4, and M ≤ 2^64/n. So
/// i − q·n is below 2n, and one conditional subtraction finishes the remainder.
class RingIndex {
 public:
  RingIndex() = default;
  /// A ring of `n` ≥ 1 entries.
  explicit RingIndex(std::size_t n) noexcept : n_(n), m_(UINT64_MAX / n) {}

  [[nodiscard]] std::size_t size() const noexcept { return n_; }

  /// i % size(), for 0 ≤ i < 2^63 (iteration numbers).
  [[nodiscard]] std::size_t operator()(std::int64_t i) const noexcept {
    __extension__ using Wide = unsigned __int128;
    const auto u = static_cast<std::uint64_t>(i);
    const auto q = static_cast<std::uint64_t>((static_cast<Wide>(u) * m_) >> 64);
    std::uint64_t r = u - q * n_;
    if (r >= n_) r -= n_;
    return static_cast<std::size_t>(r);
  }

 private:
  std::uint64_t n_ = 1;
  std::uint64_t m_ = UINT64_MAX;
};

}  // namespace swp::detail
