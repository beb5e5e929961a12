#include "swp/core/pipeline_task.hpp"

#include <doctest/doctest.h>

#include <any>
#include <functional>
#include <string>
#include <type_traits>

namespace test_pipeline_task {  // each test file's names apart (unity builds)

TEST_CASE("a pipeline task can be named without a body") {
  swp::PipelineTask task;
  CHECK(task.name.empty());
  SUBCASE("from a string literal") { task = "ZeroGrad"; }
  SUBCASE("from a std::string") { task = std::string("ZeroGrad"); }
  CHECK(task.name == "ZeroGrad");
  CHECK(task.io.empty());
}

TEST_CASE("a pipeline task holds no body: bodies are bound, typed, by swp::Plan<Ctx>") {
  auto body = [](int) {};
  static_assert(!std::is_constructible_v<swp::PipelineTask, std::string, decltype(body)>);
  static_assert(!std::is_constructible_v<swp::PipelineTask, const char*, std::function<void(int)>>);
  static_assert(!std::is_constructible_v<swp::PipelineTask, const char*, std::any>);
  static_assert(std::is_constructible_v<swp::PipelineTask, const char*>);
}

TEST_CASE("a pipeline task carries its declared side effects") {
  int captured = 0;
  swp::DeclaredIO io{[&] {
                       ++captured;
                       return std::any(1);
                     },
                     [](const std::any&) {}};
  const swp::PipelineTask task{"Backward", {io, io}};
  REQUIRE(task.io.size() == 2);
  task.io[1].capture();
  CHECK(captured == 1);
}

}  // namespace test_pipeline_task
