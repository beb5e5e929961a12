#include "swp/async/timer_queue.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace test_timer_queue {  // each test file's names apart (unity builds)

namespace {
using namespace std::chrono_literals;
}  // namespace

TEST_CASE("timers fire in time order, not in scheduling order") {
  swp::TimerQueue timers;
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> fired{0};
  const auto now = swp::Clock::now();
  auto note = [&](int k) {
    return [&, k] {
      std::lock_guard lock(mutex);
      order.push_back(k);
      fired.fetch_add(1);
    };
  };
  timers.schedule(now + 60ms, note(3));
  timers.schedule(now + 20ms, note(1));
  timers.schedule(now + 40ms, note(2));
  const auto deadline = swp::Clock::now() + 10s;
  while (fired.load() < 3 && swp::Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  std::lock_guard lock(mutex);
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(swp::Clock::now() - now >= 60ms);
}

TEST_CASE("a cancelled timer never fires; a periodic one repeats until cancelled") {
  swp::TimerQueue timers;
  std::atomic<int> once{0}, periodic{0};
  const auto id = timers.schedule(swp::Clock::now() + 30ms, [&] { once.fetch_add(1); });
  CHECK(timers.cancel(id));
  CHECK_FALSE(timers.cancel(id));  // already gone
  CHECK_FALSE(timers.cancel(0));   // never an armed id
  const auto every = timers.schedule(swp::Clock::now(), [&] { periodic.fetch_add(1); }, 2ms);
  const auto deadline = swp::Clock::now() + 10s;
  while (periodic.load() < 3 && swp::Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  timers.cancel(every);
  const int seen = periodic.load();
  CHECK(seen >= 3);
  std::this_thread::sleep_for(20ms);
  CHECK(periodic.load() == seen);  // cancel() returned: no run after it
  CHECK(once.load() == 0);
}

TEST_CASE("cancel waits for a callback that is running, so its state may go afterwards") {
  swp::TimerQueue timers;
  std::atomic<bool> started{false}, finished{false};
  const auto id = timers.schedule(swp::Clock::now(), [&] {
    started.store(true);
    std::this_thread::sleep_for(30ms);
    finished.store(true);
  });
  while (!started.load()) std::this_thread::yield();
  CHECK_FALSE(timers.cancel(id));  // it was running, not pending
  CHECK(finished.load());
}

}  // namespace test_timer_queue
