#include "swp/engine/source.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace test_source {  // each test file's names apart (unity builds)

namespace {

// Counts live copies of a range, to see who keeps a temporary alive.
struct Counted {
  static inline int alive = 0;
  std::vector<int> values{1, 2, 3};
  Counted() { ++alive; }
  Counted(const Counted& o) : values(o.values) { ++alive; }
  Counted(Counted&& o) noexcept : values(std::move(o.values)) { ++alive; }
  ~Counted() { --alive; }
  auto begin() const { return values.begin(); }
  auto end() const { return values.end(); }
};

std::vector<int> drain(swp::Source<int>& next) {
  std::vector<int> out;
  while (auto b = next()) out.push_back(*b);
  return out;
}

}  // namespace

TEST_CASE("a source is a callable returning optional<Batch> or a range of batches") {
  static_assert(swp::SourceOf<std::vector<int>&, int>);
  static_assert(swp::SourceOf<std::list<long>, long>);
  static_assert(swp::SourceOf<std::vector<short>, int>);  // elements a Batch is made from
  static_assert(swp::SourceOf<std::optional<int> (*)(), int>);
  static_assert(!swp::SourceOf<std::vector<std::string>, int>);
  static_assert(!swp::SourceOf<int, int>);
  static_assert(!swp::SourceOf<std::string (*)(), int>);
}

TEST_CASE("a callable is called once per batch until it returns empty") {
  int calls = 0;
  auto next = swp::make_source<int>([&]() -> std::optional<int> {
    ++calls;
    if (calls > 3) return std::nullopt;
    return calls * 10;
  });
  CHECK(drain(next) == std::vector<int>{10, 20, 30});
  CHECK(calls == 4);
}

TEST_CASE("a named range is read in place, a temporary is kept alive by the source") {
  SUBCASE("named") {
    std::vector<int> batches{1, 2};
    auto next = swp::make_source<int>(batches);
    batches[1] = 7;  // read in place: the change shows
    CHECK(drain(next) == std::vector<int>{1, 7});
  }
  SUBCASE("temporary") {
    {
      swp::Source<int> next = swp::make_source<int>(Counted{});
      CHECK(Counted::alive == 1);  // the moved-in copy, owned by the source
      CHECK(drain(next) == std::vector<int>{1, 2, 3});
      CHECK_FALSE(next());  // stays at end of data
    }
    CHECK(Counted::alive == 0);
  }
}

TEST_CASE("a callable is copied, named or not; std::ref makes the source call the caller's own") {
  struct Countdown {
    int left = 2;
    std::optional<int> operator()() {
      if (left == 0) return std::nullopt;
      return left--;
    }
  };
  SUBCASE("named: the source calls its copy") {
    Countdown countdown;
    auto next = swp::make_source<int>(countdown);
    CHECK(drain(next) == std::vector<int>{2, 1});
    CHECK(countdown.left == 2);  // untouched
  }
  SUBCASE("std::ref: the source calls the caller's object") {
    Countdown countdown;
    auto next = swp::make_source<int>(std::ref(countdown));
    CHECK(drain(next) == std::vector<int>{2, 1});
    CHECK(countdown.left == 0);
  }
}

}  // namespace test_source
