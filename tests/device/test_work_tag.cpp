#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "swp/device/work_tag.hpp"

namespace test_work_tag {  // each test file's names apart (unity builds)

static_assert(swp::WorkTag{} == swp::WorkTag{.task = 0, .iter = 0});

TEST_CASE("a work tag holds any task index and any iteration, each in its own field") {
  // The packed `iter << 16 | task` it replaces confused task 65536 of iteration 0 with task 0
  // of iteration 1.
  const swp::WorkTag wide{.task = 65'536, .iter = 0};
  const swp::WorkTag next{.task = 0, .iter = 1};
  CHECK_FALSE(wide == next);
  const swp::WorkTag extreme{.task = std::numeric_limits<std::uint64_t>::max(),
                             .iter = std::numeric_limits<std::int64_t>::max()};
  CHECK(extreme.task == std::numeric_limits<std::uint64_t>::max());
  CHECK(extreme.iter == std::numeric_limits<std::int64_t>::max());
  CHECK(extreme == swp::WorkTag{extreme});
}

}  // namespace test_work_tag
