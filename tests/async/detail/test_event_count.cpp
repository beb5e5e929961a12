#include "swp/async/detail/event_count.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "support/eventually.hpp"

namespace test_event_count {  // each test file's names apart (unity builds)

using swp::test::eventually;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Sleeps as `ec.commit_wait_until(key, now + limit)`; true when notified before the deadline.
// (commit_wait_until itself also returns true for a notification that came in time but whose
// wake-up was lost, once the deadline ends the sleep: that is a failure here.)
bool woken_in_time(swp::detail::EventCount& ec, swp::detail::EventCount::Key key,
                   Clock::duration limit) {
  const auto deadline = Clock::now() + limit;
  return ec.commit_wait_until(key, deadline) && Clock::now() < deadline;
}

}  // namespace

TEST_CASE("an EventCount wakes a registered waiter, and only a notify after the registration counts") {
  swp::detail::EventCount ec;
  CHECK_FALSE(ec.notify_one());  // nobody registered: nothing to do, nothing remembered
  CHECK_FALSE(ec.notify_all());

  auto key = ec.prepare_wait();
  CHECK(ec.waiting() == 1);
  CHECK(ec.notify_one());
  CHECK(ec.commit_wait_until(key, Clock::now() + 30s));  // notified: returns without sleeping
  CHECK(ec.waiting() == 0);

  key = ec.prepare_wait();
  ec.cancel_wait();
  CHECK(ec.waiting() == 0);
  CHECK_FALSE(ec.notify_all());

  // The notifications above came before this registration: it sleeps until its deadline.
  key = ec.prepare_wait();
  CHECK_FALSE(ec.commit_wait_until(key, Clock::now() + 20ms));
  CHECK(ec.waiting() == 0);
  key = ec.prepare_wait();
  CHECK_FALSE(ec.commit_wait_until(key, Clock::time_point::min()));  // long past
  CHECK(ec.waiting() == 0);
}

TEST_CASE("notify_all wakes every sleeping waiter") {
  swp::detail::EventCount ec;
  constexpr int waiters = 4;
  std::atomic<int> woken{0};
  std::atomic<int> timed_out{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&] {
      const auto key = ec.prepare_wait();
      if (woken_in_time(ec, key, 30s)) {
        woken.fetch_add(1);
      } else {
        timed_out.fetch_add(1);
      }
    });
  }
  REQUIRE(eventually([&] { return ec.waiting() == waiters; }));
  CHECK(ec.notify_all());
  for (auto& t : threads) t.join();
  CHECK(woken.load() == waiters);
  CHECK(timed_out.load() == 0);
  CHECK(ec.waiting() == 0);
}

TEST_CASE("an EventCount loses no wake-up when the notifier races the waiter's re-check") {
  // Round r: the waiter waits for `published >= r` with the two-phase protocol; the notifier
  // publishes r after a random short delay, so its store and notify land anywhere in the
  // waiter's prepare / re-check / commit. The notifier publishes within microseconds of the
  // waiter beginning its round, so a wait that reaches its 10 s deadline is a lost wake-up.
  constexpr int rounds = 5000;
  swp::detail::EventCount ec;
  std::atomic<int> published{0};
  std::atomic<int> lost{0};
  int waiters = 1;
  bool all = false;
  SUBCASE("notify_one, one waiter") {}
  SUBCASE("notify_all, three waiters") {
    waiters = 3;
    all = true;
  }
  std::vector<std::atomic<int>> ready(static_cast<std::size_t>(waiters));  // last round begun
  std::vector<std::thread> threads;
  for (int w = 0; w < waiters; ++w) {
    threads.emplace_back([&, w] {
      for (int r = 1; r <= rounds; ++r) {
        ready[static_cast<std::size_t>(w)].store(r);
        while (published.load() < r) {
          const auto key = ec.prepare_wait();
          if (published.load() >= r) {
            ec.cancel_wait();
            break;
          }
          if (!woken_in_time(ec, key, 10s)) {
            lost.fetch_add(1);
            return;
          }
        }
      }
    });
  }
  std::minstd_rand random(42);
  bool in_time = true;
  for (int r = 1; r <= rounds && in_time && lost.load() == 0; ++r) {
    for (auto& begun : ready) in_time = in_time && eventually([&] { return begun.load() >= r; });
    for (unsigned spin = random() % 2000; spin > 0; --spin) std::atomic_signal_fence(std::memory_order_seq_cst);
    published.store(r);
    if (all) {
      ec.notify_all();
    } else {
      ec.notify_one();
    }
  }
  published.store(rounds);  // lets a waiter stuck in an early round out, should the loop have stopped
  ec.notify_all();
  for (auto& t : threads) t.join();
  CHECK(in_time);
  CHECK(lost.load() == 0);
  CHECK(ec.waiting() == 0);
}

}  // namespace test_event_count
