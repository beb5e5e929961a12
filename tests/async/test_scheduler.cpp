#include "swp/async/scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_scheduler {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Counter final : swp::Runnable {
  std::atomic<int> runs{0};
  void run() noexcept override { runs.fetch_add(1); }
};

}  // namespace

TEST_CASE("park_unless parks until the next notify, once, unless the condition holds") {
  swp::SimScheduler sim;
  Counter r;
  CHECK_FALSE(sim.park_unless(r, [] { return true; }));  // ready: not parked
  sim.notify();
  sim.drive_until([] { return false; }, swp::Clock::time_point::min());
  CHECK(r.runs == 0);

  CHECK(sim.park_unless(r, [] { return false; }));
  sim.drive_until([] { return false; }, swp::Clock::time_point::min());
  CHECK(r.runs == 0);  // parked, not posted
  sim.notify();
  sim.notify();  // a second notify finds nothing parked
  sim.drive_until([&] { return r.runs > 1; }, swp::Clock::time_point::min());
  CHECK(r.runs == 1);
}

TEST_CASE("park_unless and notify race without lost wake-ups") {
  // A waiter that parks until a flag is set, against a setter on another thread that sets it
  // and notifies: whatever the interleaving, the waiter ends up running.
  swp::ThreadPoolScheduler pool(1);
  for (int round = 0; round < 2000; ++round) {
    std::atomic<bool> flag{false};
    struct Waiter final : swp::Runnable {
      swp::Scheduler* scheduler = nullptr;
      std::atomic<bool>* flag = nullptr;
      std::atomic<bool> woke{false};
      void run() noexcept override {
        if (!scheduler->park_unless(*this, [this] { return flag->load(); })) woke.store(true);
      }
    } waiter;
    waiter.scheduler = &pool;
    waiter.flag = &flag;
    std::thread setter([&] {
      flag.store(true, std::memory_order_seq_cst);
      pool.notify();
    });
    waiter.run();
    setter.join();
    REQUIRE(pool.drive_until([&] { return waiter.woke.load(); }, swp::Clock::now() + 10s));
  }
}

TEST_CASE("notify wakes every thread parked in drive_until") {
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));  // drivers park at once
  std::atomic<bool> flag{false};
  std::atomic<int> woke{0};
  std::vector<std::thread> drivers;
  for (int i = 0; i < 3; ++i) {
    drivers.emplace_back([&] {
      const auto deadline = swp::Clock::now() + 30s;
      // Woken by notify, not merely timed out with the flag set by then.
      if (pool.drive_until([&] { return flag.load(); }, deadline) && swp::Clock::now() < deadline)
        woke.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(20ms);  // most likely parked by then; either way they must wake
  flag.store(true, std::memory_order_seq_cst);
  pool.notify();
  for (auto& d : drivers) d.join();
  CHECK(woke.load() == 3);
}

}  // namespace test_scheduler
