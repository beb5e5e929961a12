#include "swp/async/future.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/started.hpp"
#include "swp/async/detail/frame_allocator.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/device/event.hpp"

namespace test_future {  // each test file's names apart (unity builds)

namespace {

// A stand-in stream that logs which events it was told to wait for (the future only carries
// the producer's event: the events here are never recorded).

struct LoggingStream {
  std::vector<const swp::Event*> waited;
  std::vector<std::uint64_t> generations;
  void wait(const swp::Event& e, std::uint64_t generation) {
    waited.push_back(&e);
    generations.push_back(generation);
  }
};

}  // namespace

TEST_CASE("a Future comes from its Promise only, never from the shared state") {
  static_assert(!std::is_constructible_v<swp::Future<int>, swp::detail::StateRef<int>>);
  static_assert(!std::is_constructible_v<swp::Future<>, swp::detail::StateRef<void>>);
  swp::Promise<int> promise;
  swp::Future<int> future = promise.get_future();
  CHECK(future.valid());
  CHECK_FALSE(swp::Future<int>().valid());
}

TEST_CASE("a ready future is awaited without suspending and yields its value") {
  auto [promise, future] = swp::make_promise<std::string>();
  promise.set_value("batch");
  CHECK(future.ready());
  auto read = [](swp::Future<std::string> f) -> swp::Co<std::string> { co_return co_await f; };
  CHECK(swp::sync_wait(read(future)) == "batch");
  CHECK(future.get() == "batch");
}

TEST_CASE("awaiters suspend until the promise completes on another thread") {
  auto [promise, future] = swp::make_promise<int>();
  std::atomic<int> resumed{0};
  auto waiter = [&](swp::Future<int> f) -> swp::Co<int> {
    const int v = co_await f;
    resumed.fetch_add(1);
    co_return v;
  };
  std::vector<std::thread> threads;
  std::vector<int> results(3, 0);
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i, f = future] { results[i] = swp::sync_wait(waiter(f)); });
  // Whether each waiter suspended or found the value ready, all see it exactly once.
  promise.set_value(11);
  for (auto& t : threads) t.join();
  CHECK(resumed.load() == 3);
  CHECK(results == std::vector<int>{11, 11, 11});
}

TEST_CASE("a producer's error is rethrown to every consumer") {
  auto [promise, future] = swp::make_promise<void>();
  promise.set_error(std::make_exception_ptr(std::runtime_error("H2D failed")));
  auto read = [](swp::Future<> f) -> swp::Co<void> { co_await f; };
  CHECK_THROWS_WITH_AS(swp::sync_wait(read(future)), "H2D failed", std::runtime_error);
  CHECK_THROWS_AS(future.get(), std::runtime_error);
}

TEST_CASE("on(stream) makes the consumer's stream wait for the producer's device event") {
  swp::Event event;
  LoggingStream stream;
  auto [promise, future] = swp::make_promise<int>();
  promise.set_event(&event, 3);
  promise.set_value(5);
  auto read = [&](swp::Future<int> f) -> swp::Co<int> { co_return co_await f.on(stream); };
  CHECK(swp::sync_wait(read(future)) == 5);
  REQUIRE(stream.waited.size() == 1);
  CHECK(stream.waited[0] == &event);
  CHECK(stream.generations[0] == 3);

  SUBCASE("a plain co_await enqueues no stream wait") {
    stream.waited.clear();
    auto plain = [](swp::Future<int> f) -> swp::Co<int> { co_return co_await f; };
    CHECK(swp::sync_wait(plain(future)) == 5);
    CHECK(stream.waited.empty());
  }
}

TEST_CASE("a promise can be reset and completed again for a later iteration") {
  swp::Promise<int> promise;
  auto future = promise.get_future();
  promise.set_value(1);
  CHECK(future.get() == 1);
  promise.reset();
  CHECK_FALSE(future.ready());
  promise.set_value(2);
  CHECK(future.get() == 2);
}

namespace {

swp::Co<void> await_future(swp::Future<int> f, int& got) { got = co_await f; }

}  // namespace

TEST_CASE("a stop signal wakes a waiting awaiter with Cancelled and its reason") {
  swp::StopSignal stop;
  auto [promise, future] = swp::make_promise<int>();
  int got = 0;
  swp::test::Started waiter(await_future(future, got), &stop);
  CHECK_FALSE(waiter.finished);
  stop.request_stop("iteration 3 timed out");
  CHECK(waiter.finished);
  CHECK(waiter.cancelled_reason() == "iteration 3 timed out");
  promise.set_value(9);  // the cancelled waiter is no longer linked: nothing is resumed twice
  CHECK(got == 0);
}

TEST_CASE("a coroutine destroyed while it waits on a future is unlinked: completion skips it") {
  auto [promise, future] = swp::make_promise<int>();
  swp::StopSignal stop;
  int kept = 0, destroyed = 0;
  swp::test::Started stays(await_future(future, kept));
  {
    swp::test::Started gone(await_future(future, destroyed), &stop);
    swp::test::Started gone_too(await_future(future, destroyed));
    CHECK_FALSE(gone.finished);
  }  // both frames freed while suspended on the future
  stop.request_stop("after the frame is gone");  // its callback was removed with it
  promise.set_value(5);  // used to resume the freed frames
  CHECK(stays.finished);
  CHECK(kept == 5);
  CHECK(destroyed == 0);
}

TEST_CASE("awaiting under an already fired stop signal throws at once") {
  swp::StopSignal stop;
  stop.request_stop("pipeline drained");
  auto [promise, future] = swp::make_promise<int>();
  int got = 0;
  swp::test::Started waiter(await_future(future, got), &stop);
  CHECK(waiter.finished);
  CHECK(waiter.cancelled_reason() == "pipeline drained");
}

TEST_CASE("completion and cancellation racing resume the waiter exactly once") {
  for (int round = 0; round < 200; ++round) {
    swp::StopSignal stop;
    auto [promise, future] = swp::make_promise<int>();
    int got = 0;
    swp::test::Started waiter(await_future(future, got), &stop);
    std::thread canceller([&] { stop.request_stop("race"); });
    promise.set_value(1);
    canceller.join();
    REQUIRE(waiter.finished);
    // Either the value arrived or the cancellation did, never both.
    CHECK((got == 1) == !waiter.error);
    if (waiter.error) CHECK(waiter.cancelled_reason() == "race");
  }
}

namespace {

// A stream stand-in that remembers only the last wait it was told (allocates nothing).
struct LastWaitStream {
  const swp::Event* event = nullptr;
  std::uint64_t generation = 0;
  void wait(const swp::Event& e, std::uint64_t g) noexcept {
    event = &e;
    generation = g;
  }
};

swp::Co<void> await_on(swp::Future<int> f, LastWaitStream& stream, long& sum) {
  sum += co_await f.on(stream);
}

}  // namespace

TEST_CASE("awaiting a reused promise's future allocates nothing after warm-up") {
  // The engines' pattern: one promise per (task, slot), reset for each iteration, awaited by a
  // consumer coroutine under the pipeline's stop signal (which never fires here).
  swp::StopSignal stop;
  swp::Promise<int> promise;
  const swp::Future<int> future = promise.get_future();
  swp::Event event;
  LastWaitStream stream;
  long sum = 0;
  auto cycle = [&](int i) {
    swp::test::Started consumer(await_on(future, stream, sum), &stop);
    const bool suspended = !consumer.finished;
    promise.set_event(&event, static_cast<std::uint64_t>(i));
    promise.set_value(i);  // resumes the consumer inline (it has no Resumer)
    const bool ok = suspended && consumer.finished && !consumer.error &&
                    stream.generation == static_cast<std::uint64_t>(i);
    promise.reset();
    return ok;
  };
  REQUIRE(cycle(0));  // warm-up: the coroutine frame's size class gets a recycled frame
  constexpr int cycles = 1000;
  std::size_t allocations = 0;
  bool all_ok = true;
  {
    swp::test::AllocationCount count;
    for (int i = 1; i <= cycles; ++i) all_ok = cycle(i) && all_ok;
    allocations = count.stop();
  }
  CHECK(all_ok);
  // Nothing but the consumer's frames, which come from the recycled pool unless pooling is off
  // (sanitizer builds: every frame from operator new, so ASan sees them).
  CHECK(allocations == (swp::detail::frames_pooled() ? 0 : cycles));
  CHECK(sum == cycles * (cycles + 1) / 2);
  CHECK(stream.event == &event);
}

}  // namespace test_future
