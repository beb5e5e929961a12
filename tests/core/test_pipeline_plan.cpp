#include "swp/core/pipeline_plan.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "swp/core/plan_graph.hpp"

namespace test_pipeline_plan {  // each test file's names apart (unity builds)

TEST_CASE("a new plan is empty with an inferred depth") {
  const swp::PipelinePlan plan;
  CHECK(plan.tasks.empty());
  CHECK(plan.intra_iter_deps.empty());
  CHECK(plan.inter_iter_deps.empty());
  CHECK_FALSE(plan.pipeline_depth.has_value());
  CHECK(plan.stream_aliases.empty());
}

TEST_CASE("a stream alias names the stream work on it runs on, in one step") {
  swp::PipelinePlan plan;
  plan.stream_aliases = {{"emb_lookup", "data_dist"}, {"data_dist", "default"}};
  CHECK(plan.device_stream("emb_lookup") == "data_dist");  // one step, not followed further
  CHECK(plan.device_stream("data_dist") == "default");
  CHECK(plan.device_stream("memcpy") == "memcpy");
  CHECK(plan.device_stream("default") == "default");
}

TEST_CASE("adding tasks returns handles with their position and name") {
  swp::PipelinePlan plan;
  const auto a = plan.add({"A"});
  const auto b = plan.add({"B"}, {.stage = 1});
  const auto c = plan.add({"C"}, {.stage = 2}, {.cpu_us = 5});
  CHECK(a == swp::TaskHandle{0, "A"});
  CHECK(b == swp::TaskHandle{1, "B"});
  CHECK(c == swp::TaskHandle{2, "C"});
  REQUIRE(plan.tasks.size() == 3);
  CHECK(plan.tasks[0].schedule == swp::TaskSchedule{});
  CHECK(plan.tasks[1].schedule.stage == 1);
  CHECK(plan.tasks[2].cost == swp::SyntheticCost{.cpu_us = 5});
}

TEST_CASE("adding does not check names, so every problem is left to validation") {
  swp::PipelinePlan plan;
  plan.add({"Same"});
  plan.add({"Same"});
  plan.add({""});
  CHECK(plan.tasks.size() == 3);
}

TEST_CASE("the seed's two-stage training loop reads the same in C++") {
  swp::PipelinePlan plan;
  auto copy = plan.add({"H2D"}, {.stage = 0, .stream = "memcpy", .thread_group = "io"});
  auto fwd = plan.add({"Forward"}, {.stage = 1, .thread_group = "compute"});
  auto bwd = plan.add({"Backward"}, {.stage = 1, .thread_group = "compute"});
  auto optim = plan.add({"Optim"}, {.stage = 1, .thread_group = "compute"});
  plan.pipeline_depth = 2;

  SUBCASE("dependencies by handle") {
    plan.intra_iter_deps = {{fwd, copy}, {bwd, fwd}, {optim, bwd}};
    plan.inter_iter_deps = {{fwd, optim}};
    CHECK(plan.intra_iter_deps[0].task.handle() != nullptr);
  }
  SUBCASE("dependencies by name") {
    plan.intra_iter_deps = {{"Forward", "H2D"}, {"Backward", "Forward"}, {"Optim", "Backward"}};
    plan.inter_iter_deps = {{"Forward", "Optim"}};
    CHECK(plan.intra_iter_deps[0].task.handle() == nullptr);
  }
  SUBCASE("dependencies mixing handles and names") {
    plan.intra_iter_deps = {{fwd, "H2D"}, {"Backward", fwd}, {optim, bwd}};
    plan.inter_iter_deps = {{"Forward", optim}};
  }

  CHECK(plan.tasks[0].task.name == "H2D");
  CHECK(plan.tasks[0].schedule ==
        swp::TaskSchedule{.stage = 0, .stream = "memcpy", .thread_group = "io"});

  const auto graph = swp::validate(plan);
  CHECK(graph.size() == 4);
  CHECK(graph.depth() == 2);
  CHECK(graph.lane(1) == "compute");
  CHECK(std::vector<swp::TaskIndex>(graph.intra_deps(1).begin(), graph.intra_deps(1).end()) ==
        std::vector<swp::TaskIndex>{0});
  CHECK(std::vector<swp::TaskIndex>(graph.intra_deps(3).begin(), graph.intra_deps(3).end()) ==
        std::vector<swp::TaskIndex>{2});
  CHECK(std::vector<swp::TaskIndex>(graph.inter_deps(1).begin(), graph.inter_deps(1).end()) ==
        std::vector<swp::TaskIndex>{3});
}

TEST_CASE("a dependency reads 'task depends on depends_on' and compares field by field") {
  const swp::Dependency d{"Forward", "WaitBatch"};
  CHECK(d.task.name() == "Forward");
  CHECK(d.depends_on.name() == "WaitBatch");
  CHECK(d == swp::Dependency{"Forward", "WaitBatch"});
  CHECK(d != swp::Dependency{"WaitBatch", "Forward"});
}

TEST_CASE("a plan is plain data that can be copied and edited") {
  swp::PipelinePlan plan;
  plan.add({"A"}, {.stage = 0});
  auto copy = plan;
  copy.tasks[0].schedule.stage = 4;
  copy.pipeline_depth = 5;
  CHECK(plan.tasks[0].schedule.stage == 0);
  CHECK_FALSE(plan.pipeline_depth);
}

}  // namespace test_pipeline_plan
