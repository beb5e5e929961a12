// detail::DependencyIndex: which {task, depends_on} name pairs a dependency list holds.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swp/core/detail/plan_index.hpp"

namespace test_plan_index {  // each test file's names apart (unity builds)

using swp::Dependency;
using swp::detail::DependencyIndex;

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

}  // namespace test_plan_index
