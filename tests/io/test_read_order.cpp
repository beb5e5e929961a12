// Read order: deterministic by default, a seeded shuffle per epoch across files that covers
// every record exactly once, and rank shares that are disjoint and complete.

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include "swp/io/read_order.hpp"

namespace test_read_order {  // each test file's names apart (unity builds)

namespace {
const std::vector<std::uint64_t> counts{5, 0, 17, 9};  // 31 records, an empty file among them

std::vector<swp::io::RecordRef> all_records() {
  std::vector<swp::io::RecordRef> all;
  for (std::uint32_t f = 0; f < counts.size(); ++f)
    for (std::uint64_t r = 0; r < counts[f]; ++r) all.push_back({f, r});
  return all;
}

std::vector<swp::io::RecordRef> sorted(std::vector<swp::io::RecordRef> v) {
  std::ranges::sort(v);
  return v;
}
}  // namespace

TEST_CASE("without shuffling every epoch reads files and records in order") {
  CHECK(swp::io::epoch_order(counts, {}, 0) == all_records());
  CHECK(swp::io::epoch_order(counts, {}, 7) == all_records());
}

TEST_CASE("a shuffle is determined by seed and epoch and covers each record exactly once") {
  const auto a = swp::io::epoch_order(counts, {.shuffle = true, .seed = 42}, 0);
  CHECK(a == swp::io::epoch_order(counts, {.shuffle = true, .seed = 42}, 0));
  CHECK(a != all_records());
  CHECK(a != swp::io::epoch_order(counts, {.shuffle = true, .seed = 43}, 0));
  CHECK(a != swp::io::epoch_order(counts, {.shuffle = true, .seed = 42}, 1));
  for (std::uint64_t epoch = 0; epoch < 5; ++epoch)
    CHECK(sorted(swp::io::epoch_order(counts, {.shuffle = true, .seed = 42}, epoch)) ==
          all_records());
  // Across files: some record of file 3 comes before some record of file 0.
  const auto first3 = std::ranges::find_if(a, [](auto r) { return r.file == 3; });
  const auto last0 = std::ranges::find_if(a.rbegin(), a.rend(), [](auto r) { return r.file == 0; });
  CHECK(first3 < last0.base());
}

TEST_CASE("rank shares are disjoint, complete and even") {
  for (const bool shuffle : {false, true}) {
    for (const std::uint32_t world : {1U, 2U, 3U, 4U, 31U, 40U}) {
      CAPTURE(shuffle);
      CAPTURE(world);
      std::vector<swp::io::RecordRef> together;
      std::set<swp::io::RecordRef> seen;
      std::size_t smallest = ~std::size_t{0}, largest = 0;
      for (std::uint32_t rank = 0; rank < world; ++rank) {
        const auto share = swp::io::epoch_order(
            counts, {.shuffle = shuffle, .seed = 3, .rank = rank, .world = world}, 2);
        smallest = std::min(smallest, share.size());
        largest = std::max(largest, share.size());
        for (const auto& r : share) CHECK(seen.insert(r).second);  // disjoint
        together.insert(together.end(), share.begin(), share.end());
      }
      CHECK(sorted(together) == all_records());  // complete
      CHECK(largest - smallest <= 1);
      // The shares are the epoch's one order, cut.
      CHECK(together == swp::io::epoch_order(counts, {.shuffle = shuffle, .seed = 3}, 2));
    }
  }
}

TEST_CASE("share boundaries are exact for any record count, where n * rank overflows") {
  constexpr std::uint64_t n = ~std::uint64_t{0};  // 2^64 - 1 = 3 * 6148914691236517205
  static_assert(swp::io::share_begin(n, 1, 3) == 6148914691236517205ULL);
  static_assert(swp::io::share_begin(n, 2, 3) == 12297829382473034410ULL);
  static_assert(swp::io::share_begin(n, 3, 3) == n);
  constexpr std::uint32_t world = ~std::uint32_t{0};
  static_assert(swp::io::share_begin(n, world - 1, world) == 18446744069414584318ULL);
  static_assert(swp::io::share_begin(n, world, world) == n);
  for (std::uint64_t records : {0, 1, 7, 31, 1000})
    for (std::uint32_t w = 1; w <= 9; ++w)
      for (std::uint32_t r = 0; r <= w; ++r)
        CHECK(swp::io::share_begin(records, r, w) == records * r / w);
}

TEST_CASE("a rank outside the world is refused") {
  CHECK_THROWS_AS((void)swp::io::epoch_order(counts, {.rank = 2, .world = 2}, 0),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)swp::io::epoch_order(counts, {.world = 0}, 0), std::invalid_argument);
}

}  // namespace test_read_order
