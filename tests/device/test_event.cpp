#include "swp/device/event.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace {

struct Flag final : swp::EventWaiter {
  int calls = 0;
  void event_completed() noexcept override { ++calls; }
};

}  // namespace

TEST_CASE("an event completes generation by generation and wakes waiters of each") {
  swp::Event event;
  CHECK(event.query());  // never armed: nothing outstanding
  int stream_id = 0;
  const auto g1 = event.arm(&stream_id);
  const auto g2 = event.arm(&stream_id);
  CHECK(g2 == g1 + 1);
  CHECK_FALSE(event.query());
  CHECK(event.recorded_on() == &stream_id);

  Flag first, second;
  CHECK(event.add_waiter(g1, first));
  CHECK(event.add_waiter(g2, second));
  const auto t1 = swp::Clock::time_point(std::chrono::microseconds(100));
  event.complete(g1, t1);
  CHECK(first.calls == 1);
  CHECK(second.calls == 0);
  CHECK(event.reached(g1));
  CHECK_FALSE(event.query());
  CHECK(event.completed_at(g1) == t1);

  event.complete(g2, t1 + std::chrono::microseconds(5));
  CHECK(second.calls == 1);
  CHECK(event.query());
  CHECK_FALSE(event.add_waiter(g1, first));  // already reached: no registration
}

TEST_CASE("a removed waiter is not called") {
  swp::Event event;
  const auto g = event.arm(nullptr);
  Flag w;
  REQUIRE(event.add_waiter(g, w));
  event.remove_waiter(w);
  event.complete(g, swp::Clock::now());
  CHECK(w.calls == 0);
}
