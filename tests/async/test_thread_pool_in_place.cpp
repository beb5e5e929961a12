// ThreadPoolScheduler: what a thread does in place, on its own work (thread_pool_in_place.cpp):
// offers it makes and takes back, and watched offers that outlive calls.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "support/eventually.hpp"
#include "support/runnables.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_thread_pool_in_place {  // each test file's names apart (unity builds)

using swp::test::CountingRunnable;
using swp::test::eventually;
using namespace std::chrono_literals;

TEST_CASE("offer says no where the thread does not drive the pool outside a runnable") {
  swp::ThreadPoolScheduler pool(1);
  CountingRunnable r;
  CHECK_FALSE(pool.offer(r));  // no drive at all
  swp::ThreadPoolScheduler other(0);
  other.drive_section([&] { CHECK_FALSE(pool.offer(r)); });  // another pool's driver
  struct Offerer final : swp::Runnable {
    swp::ThreadPoolScheduler* scheduler = nullptr;
    swp::Runnable* offered = nullptr;
    std::atomic<int> answer{-1};
    void run() noexcept override { answer.store(scheduler->offer(*offered) ? 1 : 0); }
  } inside;
  inside.scheduler = &pool;
  inside.offered = &r;
  pool.post(inside);
  CHECK(eventually([&] { return inside.answer.load() >= 0; }));
  CHECK(inside.answer.load() == 0);  // inside a runnable
  // Inside a PostBatch of the driving thread too: its posts are not announced yet.
  pool.drive_section([&] {
    const swp::detail::RunQueueHooks::PostBatch batch(pool);
    CHECK_FALSE(pool.offer(r));
  });
  CHECK(r.runs.load() == 0);
}

TEST_CASE("an offered runnable is either withdrawn unrun or run once by another thread") {
  // The driver makes progress (ran_in_place) while it holds the offer: a worker may still
  // take it between two of its looks, so both answers are legal; each must match what happened.
  swp::ThreadPoolScheduler pool(1);
  for (int round = 0; round < 200; ++round) {
    CountingRunnable r;
    bool offered = false;
    bool back = false;
    pool.drive_section([&] {
      offered = pool.offer(r);
      if (!offered) return;
      for (int k = 0; k < 10; ++k) pool.ran_in_place();
      back = pool.withdraw(r);
    });
    REQUIRE(offered);
    if (back) {
      std::this_thread::yield();
      CHECK(r.runs.load() == 0);
    } else {
      CHECK(eventually([&] { return r.runs.load() == 1; }));
      CHECK(r.ran_on.load() != std::this_thread::get_id());
    }
  }
}

// In a drive section, after `first`: offers a runnable, then makes no progress (no
// ran_in_place) until it ran; only a worker that takes it from the thread's slot can run it.
template <class First>
void check_taken_from_stuck_owner(swp::ThreadPoolScheduler& pool, First first) {
  CountingRunnable r;
  bool ran_elsewhere = false;
  bool back = true;
  pool.drive_section([&] {
    first();
    REQUIRE(pool.offer(r));
    ran_elsewhere = eventually([&] { return r.runs.load() == 1; });
    back = pool.withdraw(r);
  });
  CHECK(ran_elsewhere);
  CHECK_FALSE(back);
  CHECK(r.ran_on.load() != std::this_thread::get_id());
}

TEST_CASE("an offered runnable is taken by a worker while its thread makes no progress") {
  swp::ThreadPoolScheduler pool(1);
  std::this_thread::sleep_for(10ms);  // the worker goes idle (parks, or polls)
  check_taken_from_stuck_owner(pool, [] {});
}

TEST_CASE("a worker that parked beside fast offers still takes an offer whose thread stops") {
  // First a stream of offers withdrawn at once, with progress between them: the worker sees
  // an owner getting through its offers and parks for the patience, and offers no longer
  // wake it (ThreadPoolScheduler::wake_for_offer). The patient worker must still look again
  // within its patience and take the offer of a thread that stopped.
  swp::ThreadPoolScheduler pool(1);
  CountingRunnable quick;
  check_taken_from_stuck_owner(pool, [&] {
    bool offered = true;
    const auto until = std::chrono::steady_clock::now() + 50ms;
    while (offered && std::chrono::steady_clock::now() < until) {
      const int before = quick.runs.load();
      offered = pool.offer(quick);
      pool.ran_in_place();
      // Taken meanwhile (this thread lost its CPU): offered again only once it ran.
      if (offered && !pool.withdraw(quick))
        offered = eventually([&] { return quick.runs.load() > before; });
    }
    REQUIRE(offered);
  });
}

TEST_CASE("watch says no without workers and beyond max_watched; unwatch frees a watch") {
  CountingRunnable r;
  swp::ThreadPoolScheduler lone(0);
  CHECK(lone.watch(r) == nullptr);  // nobody could take it over

  swp::ThreadPoolScheduler pool(1);
  std::vector<std::unique_ptr<CountingRunnable>> watched;
  for (unsigned i = 0; i < swp::ThreadPoolScheduler::max_watched; ++i) {
    watched.push_back(std::make_unique<CountingRunnable>());
    REQUIRE(pool.watch(*watched.back()) != nullptr);
  }
  CHECK(pool.watch(r) == nullptr);  // every watch in use
  // Ended (taken back first, or waited for where a worker took it meanwhile): its place is
  // free again.
  if (!pool.take_back(*watched.front()))
    CHECK(eventually([&] { return watched.front()->runs.load() == 1; }));
  pool.unwatch(*watched.front());
  CHECK(pool.watch(r) != nullptr);
  for (std::size_t i = 1; i < watched.size(); ++i) {
    if (!pool.take_back(*watched[i]))
      CHECK(eventually([&] { return watched[i]->runs.load() == 1; }));
    pool.unwatch(*watched[i]);
  }
  if (!pool.take_back(r)) CHECK(eventually([&] { return r.runs.load() == 1; }));
  pool.unwatch(r);
}

// Bumps `life` like an owner inside its in-place work (RunQueueHooks::watch_inside) getting
// through short pieces of it, for `how_long`; the owner is still inside when it returns.
void make_progress(std::atomic<std::uint32_t>& life, std::chrono::milliseconds how_long) {
  life.store(life.load() | swp::detail::RunQueueHooks::watch_inside);
  const auto until = std::chrono::steady_clock::now() + how_long;
  while (std::chrono::steady_clock::now() < until)
    for (int k = 0; k < 100; ++k) life.store(life.load(std::memory_order_relaxed) + 1);
}

TEST_CASE("a watched runnable is taken by a worker once its owner stops, and offered again") {
  // Outside any drive: the watch needs no run queue of the owner's. Each round the owner first
  // moves on fast for a while (longer than a worker's patience, many times over: the worker
  // parks beside it and must keep watching), then stops.
  swp::ThreadPoolScheduler pool(1);
  CountingRunnable r;
  std::atomic<std::uint32_t>* life = pool.watch(r);
  REQUIRE(life != nullptr);
  for (int round = 1; round <= 3; ++round) {
    make_progress(*life, 20ms);
    CHECK(eventually([&] { return r.runs.load() == round; }));
    CHECK(r.ran_on.load() != std::this_thread::get_id());
    CHECK_FALSE(pool.take_back(r));  // taken: nothing in the offer
    pool.rewatch(r);
  }
  if (!pool.take_back(r)) CHECK(eventually([&] { return r.runs.load() == 4; }));
  pool.unwatch(r);
}

TEST_CASE("a watched runnable whose owner is between its pieces of work is taken once it stays away") {
  // Outside its work (watch_inside clear) the owner is not slow, only elsewhere: a worker
  // leaves it the work while it looks busy elsewhere, and takes it (to leave at once, in a
  // real owner's runnable) only once the owner made no progress over a whole patience, so
  // that idle threads need not watch it meanwhile.
  swp::ThreadPoolScheduler pool(1);
  CountingRunnable r;
  std::atomic<std::uint32_t>* life = pool.watch(r);
  REQUIRE(life != nullptr);
  make_progress(*life, 5ms);
  life->store(life->load() & ~swp::detail::RunQueueHooks::watch_inside);
  CHECK(eventually([&] { return r.runs.load() == 1; }));
  CHECK_FALSE(pool.take_back(r));
  pool.unwatch(r);
}

TEST_CASE("a watched runnable is either taken back unrun or run once by another thread") {
  swp::ThreadPoolScheduler pool(1);
  for (int round = 0; round < 50; ++round) {
    CountingRunnable r;
    std::atomic<std::uint32_t>* life = pool.watch(r);
    REQUIRE(life != nullptr);
    make_progress(*life, 1ms);
    if (pool.take_back(r)) {
      std::this_thread::yield();
      CHECK(r.runs.load() == 0);
    } else {
      CHECK(eventually([&] { return r.runs.load() == 1; }));
    }
    pool.unwatch(r);
  }
}

TEST_CASE("a drive inside in-place work runs the offer itself; withdraw then says it was taken") {
  swp::ThreadPoolScheduler pool(0);
  CountingRunnable r;
  CountingRunnable posted;
  bool back = true;
  pool.drive_section([&] {
    REQUIRE(pool.offer(r));
    pool.post(posted);
    // A nested wait on this thread takes its own next work: the offered runnable first.
    CHECK(pool.drive_until([&] { return r.runs.load() == 1 && posted.runs.load() == 1; },
                           swp::Clock::now() + 30s));
    back = pool.withdraw(r);
  });
  CHECK_FALSE(back);
  CHECK(r.runs.load() == 1);
}

}  // namespace test_thread_pool_in_place
