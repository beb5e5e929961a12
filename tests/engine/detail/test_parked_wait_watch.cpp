#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/alloc_counter.hpp"
#include "support/eventually.hpp"
#include "swp/async/timer_queue.hpp"
#include "swp/engine/detail/parked_wait_watch.hpp"

namespace test_parked_wait_watch {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::Clock;
using swp::test::eventually;
using swp::detail::ParkedWaitWatch;

namespace {

// A watch over its own timer queue, counting the ticks that reach the owner.
struct Watched {
  swp::TimerQueue timers;
  std::atomic<int> ticks{0};
  ParkedWaitWatch watch{timers, [this] { ticks.fetch_add(1); }};

  // Waits for `n` more ticks to reach the owner.
  bool ticks_past(int n) {
    const int from = ticks.load();
    return eventually([&] { return ticks.load() >= from + n; });
  }
};

}  // namespace

TEST_CASE("a tick expires the wait in progress once its deadline passed, and no other") {
  Watched w;
  // No deadline: the ticks reach the owner (its sequencer check, its notify), nothing expires.
  const ParkedWaitWatch::Id endless = w.watch.begin(Clock::time_point::max(), 1ms);
  CHECK(endless != 0);
  REQUIRE(w.ticks_past(3));
  CHECK_FALSE(w.watch.expired(endless));
  w.watch.end(endless);

  // A deadline already passed: the next tick expires this wait, not the one before.
  const ParkedWaitWatch::Id late = w.watch.begin(Clock::now(), 1ms);
  CHECK(late != endless);
  REQUIRE(eventually([&] { return w.watch.expired(late); }));
  CHECK_FALSE(w.watch.expired(endless));
  w.watch.end(late);

  // The next wait starts unexpired and stays so: the expiry belonged to `late` alone.
  const ParkedWaitWatch::Id next = w.watch.begin(Clock::time_point::max(), 1ms);
  REQUIRE(w.ticks_past(3));
  CHECK_FALSE(w.watch.expired(next));
  CHECK(w.watch.expired(late));
  w.watch.end(next);
  CHECK_FALSE(w.watch.expired(0));  // the id of a wait that never parked
}

TEST_CASE("ticks reach the owner only while a wait is in progress, and stop() ends them") {
  Watched w;
  const ParkedWaitWatch::Id first = w.watch.begin(Clock::time_point::max(), 1ms);
  REQUIRE(w.ticks_past(1));
  w.watch.end(first);
  // About 30 ticks go by with no wait: at most one that had read the wait before end() still
  // reaches the owner.
  const int after_end = w.ticks.load();
  std::this_thread::sleep_for(30ms);
  CHECK(w.ticks.load() <= after_end + 1);

  // stop() returns after any tick in progress: none reaches the owner afterwards, though a
  // wait is in progress.
  const ParkedWaitWatch::Id second = w.watch.begin(Clock::time_point::max(), 1ms);
  REQUIRE(w.ticks_past(1));
  w.watch.stop();
  const int after_stop = w.ticks.load();
  std::this_thread::sleep_for(30ms);
  CHECK(w.ticks.load() == after_stop);
  w.watch.stop();  // idempotent
  w.watch.end(second);

  // The next run's first wait arms the ticks again.
  const ParkedWaitWatch::Id third = w.watch.begin(Clock::time_point::max(), 1ms);
  CHECK(w.ticks_past(1));
  w.watch.end(third);
}

TEST_CASE("one timer serves the run: the waits after its first allocate nothing") {
  // A timer per wait cost a timer-queue node per wait (and a wake-up of the timer thread).
  Watched w;
  w.watch.end(w.watch.begin(Clock::time_point::max(), 50ms));  // arms the run's ticks
  swp::test::AllocationCount count;
  for (int i = 0; i < 100; ++i) w.watch.end(w.watch.begin(Clock::now() + 60s, 50ms));
  CHECK(count.stop() == 0);
}

}  // namespace test_parked_wait_watch
