#include "swp/async/scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

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
