#pragma once
// The order a loader reads records in: the dataset's order or a seeded shuffle per epoch,
// then this rank's share of it.

#include <cstdint>
#include <span>
#include <vector>

namespace swp::io {

/// A record of a dataset: its file (position in the dataset's file list) and its index there.
struct RecordRef {
  std::uint32_t file = 0;
  std::uint64_t record = 0;
  bool operator==(const RecordRef&) const = default;
  auto operator<=>(const RecordRef&) const = default;
};

/// How to order an epoch (the order-related part of LoaderOptions).
struct OrderOptions {
  bool shuffle = false;
  std::uint64_t seed = 0;
  std::uint32_t rank = 0;
  std::uint32_t world = 1;
};

/// Where share `rank` of `n` records cut into `world` shares begins: floor(n * rank / world),
/// computed without overflow for every n (n * rank would wrap past 2^64); share r is
/// [share_begin(n, r, world), share_begin(n, r + 1, world)).
[[nodiscard]] constexpr std::uint64_t share_begin(std::uint64_t n, std::uint64_t rank,
                                                  std::uint32_t world) noexcept {
  // n = q * world + m: n * rank / world = q * rank + m * rank / world, and m * rank stays
  // below world * world <= 2^64 for rank <= world.
  return n / world * rank + n % world * rank / world;
}

/// The records rank `options.rank` reads in epoch `epoch`, in order. The whole dataset
/// (files in order, records in order) is permuted when `shuffle` — a Fisher-Yates shuffle
/// driven by splitmix64 of (seed, epoch), so the same seed and epoch give the same order on
/// every platform — then cut into `world` contiguous shares, sizes differing by at most one;
/// rank r takes share r. Shares are disjoint and together hold every record exactly once.
/// Errors: std::invalid_argument when world is 0 or rank >= world.
/// Example: `auto mine = swp::io::epoch_order(counts, {.shuffle = true, .seed = 7}, epoch);`
std::vector<RecordRef> epoch_order(std::span<const std::uint64_t> records_per_file,
                                   const OrderOptions& options, std::uint64_t epoch);

}  // namespace swp::io
