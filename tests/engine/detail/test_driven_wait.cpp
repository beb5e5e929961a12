#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "swp/async/scheduler.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/engine/detail/driven_wait.hpp"

namespace test_driven_wait {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::Clock;
using swp::detail::DrivenWait;

namespace {

// Sets a flag when virtual time reaches the post_at it was given to.
struct SetFlag final : swp::Runnable {
  bool flag = false;
  void run() noexcept override { flag = true; }
};

swp::EngineTimeouts checked_every(std::chrono::milliseconds interval) {
  swp::EngineTimeouts t;
  t.check_interval = interval;
  return t;
}

}  // namespace

TEST_CASE("DrivenWait runs what is runnable first and reads no deadline when that is enough") {
  swp::SimScheduler sim;
  const swp::EngineTimeouts timeouts = checked_every(1ms);
  int checks = 0;
  DrivenWait wait(sim, timeouts, [&] { ++checks; });
  SetFlag work;
  sim.post(work);
  CHECK(wait.until([&] { return work.flag; }, 0ms));  // a zero deadline: what ran was enough
  CHECK(checks == 0);
}

TEST_CASE("DrivenWait on virtual time: no deadline for the model, false once nothing is left") {
  swp::SimScheduler sim;
  const swp::EngineTimeouts timeouts = checked_every(1ms);
  DrivenWait wait(sim, timeouts, {});
  SetFlag later;
  const auto start = sim.now();
  sim.post_at(start + 10s, later);  // far past the 1 ms limit below: the model's time
  CHECK(wait.until([&] { return later.flag; }, 1ms));
  CHECK(sim.now() - start == 10s);
  // Nothing left to run can make it true: known at once, with or without a deadline.
  CHECK_FALSE(wait.until([] { return false; }, 1h));
  CHECK_FALSE(wait.until_ever([] { return false; }));
  std::optional<Clock::time_point> started;
  CHECK_FALSE(wait.until([] { return false; }, 1h, started));
}

TEST_CASE("DrivenWait on the host: false past its deadline, checking at every interval") {
  swp::ThreadPoolScheduler pool(1);
  const swp::EngineTimeouts timeouts = checked_every(1ms);
  std::atomic<int> checks{0};
  DrivenWait wait(pool, timeouts, [&] { checks.fetch_add(1); });
  CHECK_FALSE(wait.until([] { return false; }, 20ms));
  CHECK(checks.load() >= 1);  // looked at least once past what was runnable
}

TEST_CASE("DrivenWait on the host: true once another thread makes the condition hold") {
  swp::ThreadPoolScheduler pool(1);
  const swp::EngineTimeouts timeouts = checked_every(1ms);
  DrivenWait wait(pool, timeouts, {});
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(2ms);
    flag.store(true);
    pool.notify();
  });
  // A deadline no machine reaches: the condition ends the wait.
  CHECK(wait.until([&] { return flag.load(); }, 1h));
  flag.store(false);
  setter.join();
  std::thread again([&] {
    std::this_thread::sleep_for(2ms);
    flag.store(true);
    pool.notify();
  });
  CHECK(wait.until_ever([&] { return flag.load(); }));
  again.join();
}

TEST_CASE("DrivenWait keeps one deadline across waits that share their start") {
  swp::ThreadPoolScheduler pool(1);
  const swp::EngineTimeouts timeouts = checked_every(1ms);
  DrivenWait wait(pool, timeouts, {});
  std::optional<Clock::time_point> started;
  // The first wait that has to look at the clock sets the start.
  CHECK_FALSE(wait.until([] { return false; }, 5ms, started));
  REQUIRE(started.has_value());
  const Clock::time_point first = *started;
  // Its limit is spent: the next wait on the same start ends at once, without moving it.
  CHECK(wait.time_left(5ms, started) == 0ms);
  CHECK_FALSE(wait.until([] { return false; }, 5ms, started));
  CHECK(*started == first);
  // A fresh start gets the whole limit (at least most of it: the clock moved since).
  std::optional<Clock::time_point> fresh;
  CHECK(wait.time_left(1h, fresh) == 1h);
  CHECK(fresh.has_value());
}

namespace {

// A scheduler that cannot drive from the waiting thread (as an AsioScheduler called inside
// its strand): drive_until returns at once. Counts the calls; `on_drive` runs in each.
struct CannotDrive final : swp::Scheduler {
  std::atomic<int> drives{0};
  std::function<void(int)> on_drive;  // gets the call's number (1, 2, ...)
  void post(swp::Runnable&) noexcept override {}
  bool drive_until(const std::function<bool()>& done, Clock::time_point) override {
    const int n = drives.fetch_add(1) + 1;
    if (on_drive) on_drive(n);
    return done();
  }
  [[nodiscard]] Clock::time_point now() const override { return Clock::now(); }

 protected:
  void wake_drivers() noexcept override {}
};

}  // namespace

TEST_CASE("DrivenWait blocks, not spins, where the scheduler cannot drive from this thread") {
  // It called drive_until in a busy loop until the deadline: a core burnt meanwhile.
  CannotDrive scheduler;
  const swp::EngineTimeouts timeouts = checked_every(10ms);
  std::atomic<int> checks{0};
  DrivenWait wait(scheduler, timeouts, [&] { checks.fetch_add(1); });
  SUBCASE("until, to its deadline") {
    CHECK_FALSE(wait.until([] { return false; }, 100ms));
    // At most one attempt per check interval (and the first, the last): however slow the
    // machine, never more.
    CHECK(scheduler.drives.load() <= 100 / 10 + 2);
    CHECK(checks.load() >= 1);
  }
  SUBCASE("until with a start, to its deadline") {
    std::optional<Clock::time_point> started;
    CHECK_FALSE(wait.until([] { return false; }, 100ms, started));
    CHECK(scheduler.drives.load() <= 100 / 10 + 2);
  }
  std::atomic<bool> flag{false};
  SUBCASE("until, the condition made true meanwhile (a completion, a cancellation)") {
    scheduler.on_drive = [&](int n) {
      if (n == 3) flag.store(true);
    };
    CHECK(wait.until([&] { return flag.load(); }, 60s));
    CHECK(scheduler.drives.load() == 3);
  }
  SUBCASE("until_ever") {
    scheduler.on_drive = [&](int n) {
      if (n == 3) flag.store(true);
    };
    CHECK(wait.until_ever([&] { return flag.load(); }));
    CHECK(scheduler.drives.load() == 3);
  }
}

}  // namespace test_driven_wait
