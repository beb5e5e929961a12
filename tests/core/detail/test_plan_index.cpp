// detail::DependencyIndex: which {task, depends_on} name pairs a dependency list holds.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "swp/core/detail/plan_index.hpp"

namespace test_plan_index {  // each test file's names apart (unity builds)

using swp::Dependency;
using swp::detail::DependencyIndex;
using swp::detail::lists_in_order;

Dependency pair(int task, int on) {
  return {"t" + std::to_string(task), "t" + std::to_string(on)};
}

TEST_CASE("DependencyIndex answers alike for a list appended at once and one by one") {
  // Appended at once, the list is indexed in one batch that fetches slots ahead; one by one,
  // an entry at a time. Either way each listed pair is found, and no other.
  std::vector<Dependency> at_once;
  for (int i = 1; i < 500; ++i) at_once.push_back(pair(i, i - 1));
  DependencyIndex batch, single;
  std::vector<Dependency> one_by_one;
  for (const Dependency& d : at_once) {
    CHECK_FALSE(single.lists(one_by_one, d));
    one_by_one.push_back(d);
    CHECK(single.lists(one_by_one, d));
  }
  for (int i = 1; i < 500; ++i) {
    CAPTURE(i);
    batch.prefetch(at_once, pair(i + 1, i));  // a hint: changes no answer
    CHECK(batch.lists(at_once, pair(i, i - 1)));
    CHECK_FALSE(batch.lists(at_once, pair(i - 1, i)));  // the pair the other way round
    CHECK(single.lists(one_by_one, pair(i, i - 1)));
  }
}

TEST_CASE("DependencyIndex indexes what was appended since, and a list that shrank afresh") {
  std::vector<Dependency> deps{pair(1, 0)};
  DependencyIndex index;
  index.prefetch(std::vector<Dependency>{}, pair(1, 0));  // an empty list has nothing to fetch
  CHECK(index.lists(deps, pair(1, 0)));
  for (int i = 2; i < 40; ++i) deps.push_back(pair(i, i - 1));  // a batch past the first look
  CHECK(index.lists(deps, pair(39, 38)));
  CHECK(index.lists(deps, pair(1, 0)));
  deps = {pair(7, 3)};  // shorter: indexed again, the old pairs are gone
  CHECK(index.lists(deps, pair(7, 3)));
  CHECK_FALSE(index.lists(deps, pair(1, 0)));
  CHECK_FALSE(index.lists(deps, pair(39, 38)));
}

TEST_CASE("lists_in_order: true exactly when the wanted pairs are listed at rising positions") {
  // Against a brute force over random lists: each wanted pair must be found at or after the
  // position the one before it was found at (a repeated pair matches the same entry).
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    std::vector<Dependency> deps, wanted;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) deps.push_back(pair(static_cast<int>(rng() % 5), static_cast<int>(rng() % 5)));
    const int m = static_cast<int>(rng() % 6);
    for (int i = 0; i < m; ++i) wanted.push_back(pair(static_cast<int>(rng() % 5), static_cast<int>(rng() % 5)));
    bool expected = true;
    std::size_t from = 0;
    for (const Dependency& d : wanted) {
      const auto it = std::find(deps.begin() + static_cast<std::ptrdiff_t>(from), deps.end(), d);
      if (it == deps.end()) {
        expected = false;
        break;
      }
      from = static_cast<std::size_t>(it - deps.begin());
    }
    CHECK(lists_in_order(deps, wanted) == expected);
  }
  // Listed, but not in that order: false (the caller then asks an index, which finds them).
  const std::vector<Dependency> deps{pair(2, 1), pair(1, 0)};
  CHECK_FALSE(lists_in_order(deps, {pair(1, 0), pair(2, 1)}));
  DependencyIndex index;
  CHECK(index.lists(deps, pair(1, 0)));
  CHECK(index.lists(deps, pair(2, 1)));
  CHECK(lists_in_order(deps, {pair(2, 1), pair(2, 1), pair(1, 0)}));
  CHECK(lists_in_order(deps, {}));
  CHECK_FALSE(lists_in_order({}, {pair(1, 0)}));
}

}  // namespace test_plan_index
