#include "swp/engine/detail/ring_index.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "support/seed.hpp"

namespace test_ring_index {  // each test file's names apart (unity builds)

namespace {

// Every i in [from, from + count) against the division.
void check_range(std::size_t n, std::int64_t from, std::int64_t count) {
  const swp::detail::RingIndex ring(n);
  for (std::int64_t k = 0; k < count; ++k) {  // (from + count may be past the int64 range)
    const std::int64_t i = from + k;
    const auto expected = static_cast<std::size_t>(static_cast<std::uint64_t>(i) % n);
    if (ring(i) != expected) {
      CAPTURE(n);
      CAPTURE(i);
      CHECK(ring(i) == expected);
      return;
    }
  }
}

}  // namespace

TEST_CASE("a ring index is the remainder of the division, for every ring size and iteration") {
  constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
  for (std::size_t n = 1; n <= 130; ++n) {
    CHECK(swp::detail::RingIndex(n).size() == n);
    check_range(n, 0, 4096);
    // Where the estimate of the quotient is furthest off: the largest iterations.
    check_range(n, top - 4095, 4096);
    check_range(n, (std::int64_t{1} << 32) - 2048, 4096);
  }
  std::mt19937_64 random(swp::test::seed(20261126));
  std::uniform_int_distribution<std::int64_t> iteration(0, top);
  std::uniform_int_distribution<std::size_t> size(1, std::size_t{1} << 20);
  for (int k = 0; k < 2000; ++k) {
    const std::size_t n = size(random);
    const swp::detail::RingIndex ring(n);
    for (int j = 0; j < 50; ++j) {
      const std::int64_t i = iteration(random);
      CAPTURE(n);
      CAPTURE(i);
      REQUIRE(ring(i) == static_cast<std::size_t>(static_cast<std::uint64_t>(i) % n));
    }
  }
  // The default ring has one entry.
  CHECK(swp::detail::RingIndex{}(top) == 0);
}

}  // namespace test_ring_index
