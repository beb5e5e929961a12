#include "swp/engine/detail/task_table.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include "support/plans.hpp"
#include "swp/engine/detail/instance.hpp"
#include "swp/engine/detail/lane_claim.hpp"
#include "swp/engine/runtime.hpp"

namespace test_task_table {  // each test file's names apart (unity builds)

using swp::TaskIndex;
using swp::detail::TaskInfo;
using swp::detail::TaskTable;
using swp::test::make_plan;

std::vector<TaskIndex> as_vector(std::span<const TaskIndex> s) { return {s.begin(), s.end()}; }

// A release policy that counts `extra` more events for every task's first iteration (as the
// data-flow admission's token would) and says whether it releases every instance.
class CountingPolicy final : public swp::detail::ReleasePolicy {
 public:
  CountingPolicy(int extra, bool every) : extra_(extra), every_(every) {}
  int extra_degree(TaskIndex, std::int64_t iter) const noexcept override {
    return iter == 0 ? extra_ : 0;
  }
  void reset() override {}
  void advance() override {}
  bool drained() const noexcept override { return true; }
  void ready(swp::detail::Instance&, bool) noexcept override {}
  void start(swp::detail::Instance&) noexcept override {}
  bool releases_every_instance() const noexcept override { return every_; }
  void ordered_finished(swp::detail::Instance&) noexcept override {}
  void explain_unreleased(std::ostream&, TaskIndex, std::int64_t, bool&) const override {}

 private:
  int extra_;
  bool every_;
};

// Load (lane "io", stream "copy") -> Step (lane "compute") -> Log (lane "compute", stream
// "copy"); Step of an iteration also waits for Log of the one before. Indices by name.
struct Tasks {
  swp::PlanGraph graph = swp::validate(
      make_plan({{"Load", 0, "copy", "io"}, {"Log", 1, "copy", "compute"},
                 {"Step", 1, "default", "compute"}},
                {{"Step", "Load"}, {"Log", "Step"}}, {{"Step", "Log"}}));
  swp::Runtime runtime;
  TaskTable table{graph, runtime};
  TaskIndex load = *graph.find("Load"), log = *graph.find("Log"),
            step = *graph.find("Step");
};

TEST_CASE("each task's lane and stream are the runtime's, each distinct one resolved once") {
  Tasks t;
  REQUIRE(t.table.size() == 3);
  for (TaskIndex i = 0; i < 3; ++i) CHECK(t.table[i].task == i);
  CHECK(t.table[t.load].lane == &t.runtime.lane("io"));
  CHECK(t.table[t.step].lane == &t.runtime.lane("compute"));
  CHECK(t.table[t.log].lane == t.table[t.step].lane);
  CHECK(t.table.streams().size() == 2);
  CHECK(t.table[t.load].stream == t.table[t.log].stream);
  CHECK(t.table[t.step].stream != t.table[t.load].stream);
  CHECK(t.table.alone_on_lane(t.load));
  CHECK_FALSE(t.table.alone_on_lane(t.step));
  CHECK_FALSE(t.table.alone_on_lane(t.log));
  for (TaskIndex i = 0; i < 3; ++i) CHECK(t.table[i].routine == nullptr);
}

TEST_CASE("dependencies, dependents and the serial order follow the plan") {
  Tasks t;
  CHECK(as_vector(t.table[t.step].intra) == std::vector<TaskIndex>{t.load});
  CHECK(as_vector(t.table[t.step].inter) == std::vector<TaskIndex>{t.log});
  CHECK(as_vector(t.table[t.load].intra_succ) == std::vector<TaskIndex>{t.step});
  CHECK(as_vector(t.table[t.step].intra_succ) == std::vector<TaskIndex>{t.log});
  CHECK(as_vector(t.table[t.log].inter_succ) == std::vector<TaskIndex>{t.step});
  CHECK(t.table[t.log].intra_succ.empty());
  CHECK(t.table.serial_order() == std::vector<TaskIndex>{t.load, t.step, t.log});
  // Inter dependencies make the proceed guarded (the device work of the iteration before).
  CHECK(t.table[t.step].proceeds_guarded);
  CHECK_FALSE(t.table[t.load].proceeds_guarded);
  CHECK_FALSE(t.table[t.log].proceeds_guarded);
}

TEST_CASE("join counts: dependencies, inter ones after the first iteration, the lane edge, "
          "the policy's extra") {
  Tasks t;
  SUBCASE("no lane edge, a policy that counts nothing more and releases every instance") {
    t.table.count_joins(CountingPolicy(0, true));
    CHECK(t.table[t.load].degree_first == 0);
    CHECK(t.table[t.load].degree == 0);
    CHECK(t.table[t.step].degree_first == 1);
    CHECK(t.table[t.step].degree == 2);
    CHECK(t.table[t.log].degree_first == 1);
    CHECK(t.table[t.log].degree == 1);
    // Only the sink counts towards its iteration's completion.
    CHECK(t.table.completion_count() == 1);
    CHECK(t.table[t.log].counts_completion);
    CHECK_FALSE(t.table[t.step].counts_completion);
  }
  SUBCASE("a lane edge and an admission token, a policy that does not release every instance") {
    std::vector<swp::detail::IterationSync> entries;
    swp::detail::LaneClaims claims;
    t.table[t.load].lane_edge = true;
    t.table[t.load].claim = &claims.add(entries, t.load, *t.table[t.load].lane);
    t.table.count_joins(CountingPolicy(1, false));
    CHECK(t.table[t.load].degree_first == 1);  // the token; no lane edge in the first iteration
    CHECK(t.table[t.load].degree == 1);        // the lane edge
    CHECK(t.table[t.step].degree_first == 2);
    CHECK(t.table[t.step].degree == 2);
    CHECK(t.table.completion_count() == 3);
    for (TaskIndex i = 0; i < 3; ++i) CHECK(t.table[i].counts_completion);
  }
  SUBCASE("a lane edge without a claim (a task that shares its lane) counts the same") {
    t.table[t.log].lane_edge = true;
    t.table.count_joins(CountingPolicy(0, true));
    CHECK(t.table[t.log].degree_first == 1);  // Step; no lane edge in the first iteration
    CHECK(t.table[t.log].degree == 2);        // Step and the lane edge
    CHECK(t.table[t.step].degree == 2);       // unchanged: Load and Log of the iteration before
  }
  SUBCASE("counted again, the counts are the latest policy's") {
    t.table.count_joins(CountingPolicy(0, false));
    t.table.count_joins(CountingPolicy(0, true));
    CHECK(t.table.completion_count() == 1);
  }
}

}  // namespace test_task_table
