#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
#include <type_traits>

#include "support/drive_to_end.hpp"
#include "support/text.hpp"
#include "swp/async/co.hpp"
#include "swp/async/detail/erased_co.hpp"
#include "swp/async/sim_scheduler.hpp"

namespace test_erased_co {  // each test file's names apart (unity builds)

using swp::test::drive_to_end;
using swp::detail::ErasedCo;
using swp::detail::ReleasedCo;
using swp::test::message_of;

namespace {

// Counts its destructions: a copy lives in the frame of the coroutine it is passed to.
struct Witness {
  int* destroyed;
  explicit Witness(int& count) : destroyed(&count) {}
  Witness(const Witness& other) = default;
  ~Witness() { ++*destroyed; }
};

swp::Co<int> value_of(Witness witness, int value) {
  (void)witness;
  co_return value;
}

swp::Co<void> fails() {
  throw std::runtime_error("failed in its frame");
  co_return;
}

}  // namespace

// What lets a routine's result come back in registers (TaskRoutine::run).
static_assert(std::is_trivially_copyable_v<ReleasedCo>);
static_assert(sizeof(ReleasedCo) == 2 * sizeof(void*));

TEST_CASE("ErasedCo::release hands the frame on: the adopter runs it, the releaser is empty") {
  int destroyed = 0;
  std::optional<int> sink;
  swp::Co<int> co = value_of(Witness(destroyed), 7);
  co.deliver_to(&sink);
  ErasedCo first(std::move(co));
  const int before = destroyed;  // the temporaries passed in are gone; the frame's copy stays
  const ReleasedCo parts = first.release();
  CHECK_FALSE(first.valid());
  REQUIRE(parts.handle);
  CHECK(parts.promise != nullptr);
  {
    ErasedCo second(parts);
    REQUIRE(second.valid());
    swp::SimScheduler sim;
    const auto ended = drive_to_end(second, sim);
    REQUIRE(ended.has_value());
    CHECK(*ended == nullptr);
    CHECK(sink == 7);
    CHECK(destroyed == before);  // the frame (finished) lives while its owner does
  }
  CHECK(destroyed == before + 1);  // freed once, by the adopter
}

TEST_CASE("an adopted frame that never ran is freed by its adopter; an empty one adopts nothing") {
  int destroyed = 0;
  ErasedCo first(value_of(Witness(destroyed), 1));
  const int before = destroyed;
  {
    const ErasedCo second(first.release());
    CHECK(second.valid());
  }
  CHECK(destroyed == before + 1);
  CHECK_FALSE(ErasedCo(ReleasedCo{}).valid());
  CHECK_FALSE(ErasedCo().release().handle);
}

TEST_CASE("a released frame keeps its error for its adopter") {
  ErasedCo first(fails());
  ErasedCo second(first.release());
  swp::SimScheduler sim;
  const auto ended = drive_to_end(second, sim);
  REQUIRE(ended.has_value());
  REQUIRE(*ended != nullptr);
  CHECK(message_of<std::exception>(*ended) == "failed in its frame");
}

}  // namespace test_erased_co
