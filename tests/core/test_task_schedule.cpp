#include "swp/core/task_schedule.hpp"

#include <doctest/doctest.h>

namespace test_task_schedule {  // each test file's names apart (unity builds)

TEST_CASE("a default task schedule is stage 0 on the default stream and lane, not ordered") {
  const swp::TaskSchedule s;
  CHECK(s.stage == 0);
  CHECK(s.stream == "default");
  CHECK(s.thread_group == "default");
  CHECK_FALSE(s.globally_ordered);
}

TEST_CASE("a task schedule reads like the seed with designated initializers") {
  const swp::TaskSchedule s{.stage = 1, .stream = "data_dist", .globally_ordered = true};
  CHECK(s.stage == 1);
  CHECK(s.stream == "data_dist");
  CHECK(s.thread_group == "default");
  CHECK(s.globally_ordered);
}

TEST_CASE("two task schedules are equal exactly when every field is") {
  const swp::TaskSchedule base{.stage = 2, .stream = "memcpy", .thread_group = "io"};
  CHECK(base == swp::TaskSchedule{.stage = 2, .stream = "memcpy", .thread_group = "io"});

  auto other = base;
  SUBCASE("stage") { other.stage = 3; }
  SUBCASE("stream") { other.stream = "default"; }
  SUBCASE("thread group") { other.thread_group = "compute"; }
  SUBCASE("globally ordered") { other.globally_ordered = true; }
  CHECK(other != base);
}

}  // namespace test_task_schedule
