#include "swp/core/pipeline_task.hpp"

#include <doctest/doctest.h>

#include <any>
#include <functional>
#include <string>

TEST_CASE("a pipeline task can be named without a body") {
  swp::PipelineTask task;
  CHECK(task.name.empty());
  SUBCASE("from a string literal") { task = "ZeroGrad"; }
  SUBCASE("from a std::string") { task = std::string("ZeroGrad"); }
  CHECK(task.name == "ZeroGrad");
  CHECK_FALSE(task.fn.has_value());
  CHECK(task.io.empty());
}

TEST_CASE("a pipeline task keeps its body type-erased and callable") {
  int calls = 0;
  std::function<void(int)> body = [&](int batch) { calls += batch; };
  const swp::PipelineTask task{"Forward", body};
  CHECK(task.name == "Forward");
  REQUIRE(task.fn.type() == typeid(std::function<void(int)>));
  std::any_cast<const std::function<void(int)>&>(task.fn)(3);
  CHECK(calls == 3);
}

TEST_CASE("a body of another type than the engine expects is detectable") {
  const swp::PipelineTask task{"Forward", [] { return 1; }};
  CHECK(task.fn.has_value());
  CHECK(std::any_cast<std::function<void(int)>>(&task.fn) == nullptr);
}

TEST_CASE("a pipeline task carries its declared side effects") {
  int captured = 0;
  swp::DeclaredIO io{[&] {
                       ++captured;
                       return std::any(1);
                     },
                     [](const std::any&) {}};
  const swp::PipelineTask task{"Backward", [] {}, {io, io}};
  REQUIRE(task.io.size() == 2);
  task.io[1].capture();
  CHECK(captured == 1);
}
