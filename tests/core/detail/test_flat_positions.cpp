// detail::FlatPositions: a flat hash index of positions in a caller's list.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "swp/core/detail/flat_positions.hpp"

namespace test_flat_positions {  // each test file's names apart (unity builds)

using swp::detail::FlatPositions;

TEST_CASE("FlatPositions finds each position added, and nothing else") {
  std::vector<std::string> list;
  FlatPositions index;
  const auto named = [&list](const std::string& name) {
    return [&list, &name](std::size_t p) { return list[p] == name; };
  };
  const std::string absent = "absent";
  CHECK(index.find(7, named(absent)) == FlatPositions::npos);  // empty
  // Far more than the first table holds (it grows), with hashes that collide in fours: a
  // probe must compare the entries, not trust the hash.
  for (std::size_t i = 0; i < 1000; ++i) {
    list.push_back("name" + std::to_string(i));
    index.add(i / 4, i);
  }
  for (std::size_t i = 0; i < 1000; ++i) {
    CAPTURE(i);
    CHECK(index.find(i / 4, named(list[i])) == i);
  }
  CHECK(index.find(0, named(absent)) == FlatPositions::npos);
  CHECK(index.find(0, named(list[4])) == FlatPositions::npos);  // another hash's entry
  index.clear();
  CHECK(index.find(0, named(list[0])) == FlatPositions::npos);
}

TEST_CASE("FlatPositions gives the smallest position among equal keys, also after growing") {
  // Equal keys under a hash whose probes wrap around the end of the table: growing re-places
  // them in slot order, the later one first.
  std::vector<std::string> list;
  FlatPositions index;
  const auto is_a = [&list](std::size_t p) { return list[p] == "a"; };
  for (std::size_t i = 0; i < 200; ++i) {
    list.push_back(i == 3 || i == 5 || i % 50 == 3 ? "a" : "x" + std::to_string(i));
    index.add(list.back() == "a" ? 15 : 1000 + i, i);
    CAPTURE(i);
    CHECK(index.find(15, is_a) == (i >= 3 ? 3 : FlatPositions::npos));
  }
}

TEST_CASE("FlatPositions keeps its entries through a reserve, before and after adding") {
  std::vector<std::string> list;
  FlatPositions index;
  const auto named = [&list](std::size_t i) {
    return [&list, i](std::size_t p) { return list[p] == list[i]; };
  };
  index.reserve(0);
  index.reserve(300);  // before any entry
  for (std::size_t i = 0; i < 100; ++i) {
    list.push_back("r" + std::to_string(i));
    index.add(i % 7, i);
  }
  index.reserve(50);    // smaller than it holds: nothing changes
  index.reserve(5000);  // larger: the entries are re-placed
  for (std::size_t i = 100; i < 1200; ++i) {
    list.push_back("r" + std::to_string(i));
    index.add(i % 7, i);
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    CAPTURE(i);
    CHECK(index.find(i % 7, named(i)) == i);
  }
}

}  // namespace test_flat_positions
