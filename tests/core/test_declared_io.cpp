#include "swp/core/declared_io.hpp"

#include <doctest/doctest.h>

#include <any>
#include <map>
#include <string>
#include <vector>

namespace test_declared_io {  // each test file's names apart (unity builds)

TEST_CASE("declared_io captures a snapshot of shared state and restores it on replay") {
  std::map<std::string, int> shared_buffer{{"batch", 1}};
  int restores = 0;
  auto io = swp::declared_io<std::map<std::string, int>>(
      [&] { return shared_buffer; },
      [&](const auto& saved) {
        ++restores;
        shared_buffer = saved;
      });

  const std::any snapshot = io.capture();
  CHECK(restores == 0);  // capturing never restores
  REQUIRE(snapshot.type() == typeid(std::map<std::string, int>));

  shared_buffer["batch"] = 2;
  shared_buffer["extra"] = 3;
  SUBCASE("the snapshot is a copy, not a view of the live state") {
    CHECK(std::any_cast<const std::map<std::string, int>&>(snapshot).at("batch") == 1);
  }
  SUBCASE("restoring writes the snapshot back, every time it replays") {
    io.restore(snapshot);
    CHECK(shared_buffer == std::map<std::string, int>{{"batch", 1}});
    shared_buffer["batch"] = 9;
    io.restore(snapshot);
    CHECK(shared_buffer.at("batch") == 1);
    CHECK(restores == 2);
  }
}

TEST_CASE("declared_io stores the snapshot as T even when capture returns something else") {
  auto io = swp::declared_io<std::string>([] { return "literal"; },
                                          [](const std::string& s) { CHECK(s == "literal"); });
  const auto snapshot = io.capture();
  CHECK(snapshot.type() == typeid(std::string));
  io.restore(snapshot);
}

TEST_CASE("restoring a snapshot of another type fails loudly") {
  auto io = swp::declared_io<int>([] { return 1; }, [](int) {});
  CHECK_THROWS_AS(io.restore(std::any(std::string("not an int"))), std::bad_any_cast);
}

TEST_CASE("a DeclaredIO can be written by hand with std::any") {
  std::vector<int> log;
  swp::DeclaredIO io{[] { return std::any(42); },
                     [&](const std::any& v) { log.push_back(std::any_cast<int>(v)); }};
  io.restore(io.capture());
  CHECK(log == std::vector<int>{42});
}

TEST_CASE("a default DeclaredIO has neither capture nor restore") {
  const swp::DeclaredIO io;
  CHECK_FALSE(io.capture);
  CHECK_FALSE(io.restore);
}

}  // namespace test_declared_io
