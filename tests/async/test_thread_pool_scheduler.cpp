#include "swp/async/thread_pool_scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

struct CountingRunnable final : swp::Runnable {
  std::atomic<int>* count = nullptr;
  std::thread::id ran_on;
  void run() noexcept override {
    ran_on = std::this_thread::get_id();
    count->fetch_add(1);
  }
};

// Posts `follow` from inside its own run: the follower must run on the same thread.
struct ChainRunnable final : swp::Runnable {
  swp::Scheduler* scheduler = nullptr;
  swp::Runnable* follow = nullptr;
  std::thread::id ran_on;
  void run() noexcept override {
    ran_on = std::this_thread::get_id();
    if (follow != nullptr) scheduler->post(*follow);
  }
};

}  // namespace

TEST_CASE("every posted runnable runs exactly once") {
  swp::ThreadPoolScheduler pool(2);
  std::atomic<int> count{0};
  std::vector<CountingRunnable> work(1000);
  for (auto& w : work) {
    w.count = &count;
    pool.post(w);
  }
  CHECK(pool.drive_until([&] { return count.load() == 1000; }, swp::Clock::now() + 10s));
}

TEST_CASE("a runnable posted by a running one continues on the same thread") {
  swp::ThreadPoolScheduler pool(1);
  std::atomic<int> count{0};
  CountingRunnable tail;
  tail.count = &count;
  ChainRunnable head;
  head.scheduler = &pool;
  head.follow = &tail;
  pool.post(head);
  REQUIRE(pool.drive_until([&] { return count.load() == 1; }, swp::Clock::now() + 10s));
  CHECK(tail.ran_on == head.ran_on);
}

TEST_CASE("with no workers, the thread in drive_until runs the work") {
  swp::ThreadPoolScheduler pool(0);
  std::atomic<int> count{0};
  CountingRunnable w;
  w.count = &count;
  pool.post(w);
  CHECK(pool.drive_until([&] { return count.load() == 1; }, swp::Clock::now() + 1s));
  CHECK(w.ran_on == std::this_thread::get_id());
}

TEST_CASE("drive_until returns false at its deadline when the condition never holds") {
  swp::ThreadPoolScheduler pool(1);
  const auto start = swp::Clock::now();
  CHECK_FALSE(pool.drive_until([] { return false; }, start + 20ms));
  CHECK(swp::Clock::now() - start >= 20ms);
}

TEST_CASE("notify wakes a thread waiting in drive_until") {
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(10ms);
    flag.store(true);
    pool.notify();
  });
  const auto start = swp::Clock::now();
  CHECK(pool.drive_until([&] { return flag.load(); }, start + 10s));
  setter.join();
  CHECK(swp::Clock::now() - start < 5s);
}
