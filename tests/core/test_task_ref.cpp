#include "swp/core/task_ref.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace test_task_ref {  // each test file's names apart (unity builds)

TEST_CASE("a task handle is its position plus its name") {
  const swp::TaskHandle h{3, "Forward"};
  CHECK(h.index == 3);
  CHECK(h.name == "Forward");
  CHECK(h == swp::TaskHandle{3, "Forward"});
  CHECK(h != swp::TaskHandle{2, "Forward"});
  CHECK(h != swp::TaskHandle{3, "Backward"});
}

TEST_CASE("a task reference made from a handle keeps the handle and its name") {
  const swp::TaskRef ref = swp::TaskHandle{5, "OptimizerStep"};
  CHECK(ref.name() == "OptimizerStep");
  REQUIRE(ref.handle() != nullptr);
  CHECK(ref.handle()->index == 5);
  CHECK(*ref.handle() == swp::TaskHandle{5, "OptimizerStep"});
}

TEST_CASE("a task reference made from a name has no handle") {
  std::string name = "WaitBatch";
  swp::TaskRef ref = "placeholder";
  SUBCASE("from a string literal") { ref = "WaitBatch"; }
  SUBCASE("from a std::string") { ref = name; }
  SUBCASE("from a std::string_view") { ref = std::string_view(name); }
  CHECK(ref.name() == "WaitBatch");
  CHECK(ref.handle() == nullptr);
}

TEST_CASE("a task reference owns its name") {
  std::string name = "Forward";
  const swp::TaskRef ref = std::string_view(name);
  name = "Clobbered";
  CHECK(ref.name() == "Forward");
}

TEST_CASE("task references compare by what they were made from") {
  CHECK(swp::TaskRef("A") == swp::TaskRef(std::string("A")));
  CHECK(swp::TaskRef("A") != swp::TaskRef("B"));
  CHECK(swp::TaskRef(swp::TaskHandle{0, "A"}) == swp::TaskRef(swp::TaskHandle{0, "A"}));
  CHECK(swp::TaskRef(swp::TaskHandle{0, "A"}) != swp::TaskRef(swp::TaskHandle{1, "A"}));
}

}  // namespace test_task_ref
