#include "swp/core/synthetic_cost.hpp"

#include <doctest/doctest.h>

namespace test_synthetic_cost {  // each test file's names apart (unity builds)

TEST_CASE("a default synthetic cost is free and has no jitter") {
  const swp::SyntheticCost c;
  CHECK(c.cpu_us == 0);
  CHECK(c.device_us == 0);
  CHECK(c.jitter_every == 0);
  CHECK(c.jitter_device_us == 0);
  for (long long iter = 0; iter < 10; ++iter) CHECK(c.device_us_at(iter) == 0);
}

TEST_CASE("without jitter every iteration takes device_us") {
  const swp::SyntheticCost c{.cpu_us = 20, .device_us = 300, .jitter_device_us = 5000};
  for (long long iter = 0; iter < 10; ++iter) CHECK(c.device_us_at(iter) == 300);
}

TEST_CASE("jitter hits the iterations where iter % every == every - 1") {
  SUBCASE("every third iteration: 2, 5, 8, ...") {
    const swp::SyntheticCost c{.device_us = 100, .jitter_every = 3, .jitter_device_us = 900};
    for (long long iter = 0; iter < 30; ++iter) {
      CAPTURE(iter);
      CHECK(c.device_us_at(iter) == (iter % 3 == 2 ? 900 : 100));
    }
    CHECK(c.device_us_at(0) == 100);
    CHECK(c.device_us_at(2) == 900);
    CHECK(c.device_us_at(3) == 100);
    CHECK(c.device_us_at(1'000'000'001) == 900);  // large iteration counts work too
  }
  SUBCASE("every iteration when every is 1") {
    const swp::SyntheticCost c{.device_us = 100, .jitter_every = 1, .jitter_device_us = 7};
    for (long long iter = 0; iter < 5; ++iter) CHECK(c.device_us_at(iter) == 7);
  }
  SUBCASE("jitter can also make an iteration cheaper") {
    const swp::SyntheticCost c{.device_us = 100, .jitter_every = 2, .jitter_device_us = 0};
    CHECK(c.device_us_at(0) == 100);
    CHECK(c.device_us_at(1) == 0);
  }
}

TEST_CASE("jitter does not change the cpu cost") {
  const swp::SyntheticCost c{.cpu_us = 20, .device_us = 1, .jitter_every = 2,
                             .jitter_device_us = 50};
  CHECK(c.device_us_at(1) == 50);
  CHECK(c.cpu_us == 20);
}

TEST_CASE("two synthetic costs are equal exactly when every field is") {
  const swp::SyntheticCost base{.cpu_us = 1, .device_us = 2, .jitter_every = 3,
                                .jitter_device_us = 4};
  CHECK(base == swp::SyntheticCost{1, 2, 3, 4});
  auto other = base;
  SUBCASE("cpu") { other.cpu_us = 1.5; }
  SUBCASE("device") { other.device_us = 0; }
  SUBCASE("jitter every") { other.jitter_every = 0; }
  SUBCASE("jitter device") { other.jitter_device_us = 4.25; }
  CHECK(other != base);
}

TEST_CASE("mean_device_us averages the device time over a jitter period") {
  CHECK(swp::SyntheticCost{.device_us = 300}.mean_device_us() == 300);
  const swp::SyntheticCost jittery{.device_us = 100, .jitter_every = 3, .jitter_device_us = 900};
  CHECK(jittery.mean_device_us() == doctest::Approx((100.0 + 100 + 900) / 3));
  double sum = 0;
  for (long long iter = 0; iter < 3; ++iter) sum += jittery.device_us_at(iter);
  CHECK(jittery.mean_device_us() == doctest::Approx(sum / 3));
}

}  // namespace test_synthetic_cost
