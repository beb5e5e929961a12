#include "support/drive_to_end.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/text.hpp"
#include "swp/async/co.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_drive_to_end {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::drive_to_end;
using swp::detail::ErasedCo;
using swp::test::message_of;

namespace {

swp::Co<void> at_once(int& runs) {
  ++runs;
  co_return;
}

swp::Co<void> throws_at_once() {
  throw std::runtime_error("bad batch");
  co_return;
}

swp::Co<void> awaits(swp::Future<int> f, int& seen) { seen = co_await f; }

swp::Co<void> awaits_then_throws(swp::Future<int> f) {
  (void)co_await f;
  throw std::runtime_error("after the await");
}

// Sets its promise when virtual time reaches the post_at it was given to.
struct SetLater final : swp::Runnable {
  swp::Promise<int> promise;
  int value = 0;
  void run() noexcept override { promise.set_value(value); }
};

}  // namespace

TEST_CASE("drive_to_end: a body that completes at once ends with no error, driving nothing") {
  swp::SimScheduler sim;
  int runs = 0;
  ErasedCo body(at_once(runs));
  const auto ended = drive_to_end(body, sim);
  REQUIRE(ended.has_value());
  CHECK(*ended == nullptr);
  CHECK(runs == 1);
  CHECK(sim.now() == swp::Clock::time_point{});  // no virtual time passed
}

TEST_CASE("drive_to_end returns a body's error, thrown before or after its first await") {
  swp::SimScheduler sim;
  ErasedCo first(throws_at_once());
  const auto early = drive_to_end(first, sim);
  REQUIRE(early.has_value());
  REQUIRE(*early != nullptr);
  CHECK(message_of<std::exception>(*early) == "bad batch");

  auto [promise, future] = swp::make_promise<int>();
  SetLater later;
  later.promise = std::move(promise);
  sim.post_at(sim.now() + 5us, later);
  ErasedCo second(awaits_then_throws(std::move(future)));
  const auto late = drive_to_end(second, sim);
  REQUIRE(late.has_value());
  REQUIRE(*late != nullptr);
  CHECK(message_of<std::exception>(*late) == "after the await");
}

TEST_CASE("drive_to_end drives virtual time until the body's await completes") {
  swp::SimScheduler sim;
  auto [promise, future] = swp::make_promise<int>();
  SetLater later;
  later.promise = std::move(promise);
  later.value = 42;
  const auto start = sim.now();
  sim.post_at(start + 300us, later);
  int seen = 0;
  ErasedCo body(awaits(std::move(future), seen));
  const auto ended = drive_to_end(body, sim);
  REQUIRE(ended.has_value());
  CHECK(*ended == nullptr);
  CHECK(seen == 42);
  CHECK(sim.now() - start == 300us);  // virtual time: exact
}

TEST_CASE("drive_to_end says a body can never end when nothing left to run would end it") {
  swp::SimScheduler sim;
  auto [promise, future] = swp::make_promise<int>();  // never set
  int seen = 0;
  {
    ErasedCo body(awaits(std::move(future), seen));
    CHECK_FALSE(drive_to_end(body, sim).has_value());
    // The body stays suspended; it goes with `body`, before its promise.
  }
  CHECK(seen == 0);
}

TEST_CASE("drive_to_end waits for a body whose await completes on another thread") {
  swp::ThreadPoolScheduler pool(1);
  auto [promise, future] = swp::make_promise<int>();
  int seen = 0;
  ErasedCo body(awaits(std::move(future), seen));
  std::thread producer([p = std::move(promise)]() mutable {
    std::this_thread::sleep_for(1ms);
    p.set_value(7);
  });
  const auto ended = drive_to_end(body, pool);
  producer.join();
  REQUIRE(ended.has_value());
  CHECK(*ended == nullptr);
  CHECK(seen == 7);
}

}  // namespace test_drive_to_end
