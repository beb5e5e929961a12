// RunQueueHooks::RunHere on a ThreadPoolScheduler: where a worker-less pool's only runner keeps its
// posts and runs them as the scope ends.

#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "support/eventually.hpp"
#include "support/runnables.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_run_here {  // each test file's names apart (unity builds)

using swp::test::CountingRunnable;
using swp::test::eventually;
using swp::test::logging;
using namespace std::chrono_literals;

TEST_CASE("a RunHere on a pool without workers runs its posts on this thread as it ends") {
  // In post order, each with its post_next chain; nothing runs before the scope ends.
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  auto rs = logging(pool, log, 3);
  rs[0]->follow_next = {rs[2].get()};  // 3 runs right after 1, before 2
  const auto in_scope = [&] {
    log.clear();
    {
      const swp::detail::RunQueueHooks::RunHere here(pool);
      CHECK(here.open());  // this thread is the pool's only runner until the scope ends
      pool.post(*rs[0]);
      pool.post(*rs[1]);
      CHECK(log.empty());  // kept: no queue, no other thread
    }
    CHECK(log == std::vector<int>{1, 3, 2});
  };
  SUBCASE("running no pool's work") { in_scope(); }
  SUBCASE("inside a drive section") { pool.drive_section(in_scope); }
  SUBCASE("a runnable's plain post runs at the next drive") {
    rs[0]->follow_next.clear();
    rs[0]->follow = rs[2].get();
    {
      const swp::detail::RunQueueHooks::RunHere here(pool);
      pool.post(*rs[0]);
    }
    CHECK(log == std::vector<int>{1});
    CHECK(pool.drive_until([&] { return log.size() == 2; }, swp::Clock::now() + 30s));
    CHECK(log == std::vector<int>{1, 3});
  }
}

TEST_CASE("a RunHere changes nothing where other threads run the pool's work") {
  SUBCASE("a pool with a worker: posts are not held back") {
    swp::ThreadPoolScheduler pool(1);
    CountingRunnable r;
    const swp::detail::RunQueueHooks::RunHere here(pool);
    CHECK_FALSE(here.open());
    pool.post(r);
    CHECK(eventually([&] { return r.runs.load() == 1; }));  // before the scope ends
    CHECK(r.ran_on.load() != std::this_thread::get_id());
  }
  SUBCASE("inside a runnable: its posts go to its thread's queue as usual") {
    swp::ThreadPoolScheduler pool(0);
    CountingRunnable inner;
    struct Opener final : swp::Runnable {
      swp::ThreadPoolScheduler* scheduler = nullptr;
      swp::Runnable* post = nullptr;
      bool open = true;
      void run() noexcept override {
        const swp::detail::RunQueueHooks::RunHere here(*scheduler);
        open = here.open();
        scheduler->post(*post);
      }
    } opener;
    opener.scheduler = &pool;
    opener.post = &inner;
    pool.post(opener);
    CHECK(pool.drive_until([&] { return inner.runs.load() == 1; }, swp::Clock::now() + 30s));
    CHECK_FALSE(opener.open);
  }
}

TEST_CASE("a drive inside a RunHere runs what the scope kept") {
  // A scope's posts are hidden until it ends: a drive that waits for them inside it must get
  // them, or it would wait forever.
  swp::ThreadPoolScheduler pool(0);
  CountingRunnable r;
  const auto in_scope = [&] {
    const swp::detail::RunQueueHooks::RunHere here(pool);
    pool.post(r);
    CHECK(pool.drive_until([&] { return r.runs.load() == 1; }, swp::Clock::now() + 30s));
  };
  SUBCASE("running no pool's work") { in_scope(); }
  SUBCASE("inside a drive section") { pool.drive_section(in_scope); }
  SUBCASE("from a runnable the scope runs as it ends") {
    CountingRunnable later;
    struct Waiter final : swp::Runnable {
      swp::ThreadPoolScheduler* pool = nullptr;
      CountingRunnable* awaited = nullptr;
      bool got = false;
      void run() noexcept override {
        got = pool->drive_until([&] { return awaited->runs.load() == 1; },
                                swp::Clock::now() + 30s);
      }
    } waiter;
    waiter.pool = &pool;
    waiter.awaited = &later;
    {
      const swp::detail::RunQueueHooks::RunHere here(pool);
      pool.post(waiter);
      pool.post(later);  // kept behind the waiter, which waits for it
    }
    CHECK(waiter.got);
    CHECK(later.runs.load() == 1);
  }
}

TEST_CASE("runnables that keep handing on to each other cannot hold a RunHere's end") {
  // Two runnables post_next each other: an endless bypass chain. The scope's end runs a
  // bounded number, then posts the rest, which the next drive finishes.
  swp::ThreadPoolScheduler pool(0);
  struct PingPong final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    PingPong* other = nullptr;
    int* steps = nullptr;
    int total = 0;
    void run() noexcept override {
      if (++*steps < total) scheduler->post_next(*other);
    }
  };
  int steps = 0;
  PingPong ping;
  PingPong pong;
  for (PingPong* p : {&ping, &pong}) {
    p->scheduler = &pool;
    p->steps = &steps;
    p->total = 1000;
  }
  ping.other = &pong;
  pong.other = &ping;
  {
    const swp::detail::RunQueueHooks::RunHere here(pool);
    pool.post(ping);
  }
  CHECK(steps > 1);  // the chain ran as the scope ended
  CHECK(steps < 1000);
  CHECK(pool.drive_until([&] { return steps == 1000; }, swp::Clock::now() + 30s));
}

}  // namespace test_run_here
