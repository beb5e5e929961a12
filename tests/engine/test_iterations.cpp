#include "swp/engine/iterations.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <ranges>
#include <stdexcept>
#include <vector>

#include "swp/engine/clock_pipeline.hpp"

namespace test_iterations {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<int>;

// Anything with progress() is iterable: retires `n` iterations, then fails if `fail`.
struct Counter {
  int n = 0;
  bool fail = false;
  int next = 0;
  std::optional<std::int64_t> progress() {
    if (next < n) return next++;
    if (fail) throw std::runtime_error("broken");
    return std::nullopt;
  }
};

}  // namespace

TEST_CASE("Iterations is an input range over what progress() retires") {
  static_assert(std::ranges::input_range<swp::Iterations<Counter>>);
  Counter counter{.n = 3};
  std::vector<std::int64_t> seen;
  for (std::int64_t iter : swp::Iterations(counter)) seen.push_back(iter);
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2});
}

TEST_CASE("an error of progress() propagates from the increment") {
  Counter counter{.n = 1, .fail = true};
  swp::Iterations range(counter);
  auto it = range.begin();
  CHECK(*it == 0);
  CHECK_THROWS_WITH(++it, "broken");
}

TEST_CASE("pipe.iterations(source) fills the pipeline and yields every retired iteration") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("A", [](Ctx&) {}, {.stage = 0});
  plan.add("B", [](Ctx&) {}, {.stage = 1});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  std::vector<std::int64_t> seen;
  for (std::int64_t iter : pipe.iterations(std::vector<int>(4, 0))) seen.push_back(iter);
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2, 3});
  pipe.drain();
}

}  // namespace test_iterations
