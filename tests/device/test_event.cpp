#include "swp/device/event.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/alloc_counter.hpp"

namespace test_event {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Flag final : swp::EventWaiter {
  std::atomic<int> calls{0};
  void event_completed() noexcept override { ++calls; }
};

// Spins until `flag` is set or 10 s passed.
bool await_flag(const std::atomic<bool>& flag) {
  const auto deadline = swp::Clock::now() + 10s;
  while (!flag.load()) {
    if (swp::Clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// A waiter whose callback holds on until released (at most 10 s), to catch it in flight.
struct Blocking final : swp::EventWaiter {
  std::atomic<bool> entered{false}, release{false}, finished{false};
  void event_completed() noexcept override {
    entered = true;
    await_flag(release);
    finished = true;
  }
};

}  // namespace

TEST_CASE("an event completes generation by generation and wakes waiters of each") {
  swp::Event event;
  CHECK(event.query());  // never armed: nothing outstanding
  int stream_id = 0;
  const auto g1 = event.arm(&stream_id);
  const auto g2 = event.arm(&stream_id);
  CHECK(g2 == g1 + 1);
  CHECK_FALSE(event.query());
  CHECK(event.recorded_on() == &stream_id);

  Flag first, second;
  CHECK(event.add_waiter(g1, first));
  CHECK(event.add_waiter(g2, second));
  const auto t1 = swp::Clock::time_point(std::chrono::microseconds(100));
  event.complete(g1, t1);
  CHECK(first.calls == 1);
  CHECK(second.calls == 0);
  CHECK(event.reached(g1));
  CHECK_FALSE(event.query());
  CHECK(event.completed_at(g1) == t1);

  event.complete(g2, t1 + std::chrono::microseconds(5));
  CHECK(second.calls == 1);
  CHECK(event.query());
  CHECK_FALSE(event.add_waiter(g1, first));  // already reached: no registration
}

TEST_CASE("a removed waiter is not called") {
  swp::Event event;
  const auto g = event.arm(nullptr);
  Flag w;
  SUBCASE("registered by reference") {
    REQUIRE(event.add_waiter(g, w));
    event.remove_waiter(w);
  }
  SUBCASE("registered with its own node") {
    swp::EventWait node(w);
    REQUIRE(event.add_waiter(g, node));
    CHECK(event.remove_waiter(node));  // true: removed before completion took it
    CHECK_FALSE(event.remove_waiter(node));
  }
  event.complete(g, swp::Clock::now());
  CHECK(w.calls == 0);
}

TEST_CASE("a completion wakes the waiters of the generations it reached, oldest first") {
  swp::Event event;
  struct Logged final : swp::EventWaiter {
    std::vector<int>* log = nullptr;
    int id = 0;
    void event_completed() noexcept override { log->push_back(id); }
  };
  std::vector<int> log;
  std::array<Logged, 3> waiters;
  std::array<swp::EventWait, 3> nodes{swp::EventWait(waiters[0]), swp::EventWait(waiters[1]),
                                      swp::EventWait(waiters[2])};
  const auto g1 = event.arm(nullptr);
  event.arm(nullptr);
  event.arm(nullptr);
  for (int i : {2, 0, 1}) {  // registered out of generation order
    waiters[i].log = &log;
    waiters[i].id = i;
    REQUIRE(event.add_waiter(g1 + i, nodes[i]));
  }
  event.complete(g1 + 1, swp::Clock::now());
  CHECK(log == std::vector<int>{0, 1});
  event.complete(g1 + 2, swp::Clock::now());
  CHECK(log == std::vector<int>{0, 1, 2});
  CHECK_FALSE(event.remove_waiter(nodes[2]));  // completion took it
}

TEST_CASE("one waiter registered with several events is told by each") {
  swp::Event a, b;
  Flag w;  // as the engines' device waker: one object watching every event of an iteration
  REQUIRE(a.add_waiter(a.arm(nullptr), w));
  const auto gb = b.arm(nullptr);
  REQUIRE(b.add_waiter(gb, w));
  REQUIRE(b.add_waiter(gb, w));  // twice with the same event, too
  a.complete(1, swp::Clock::now());
  CHECK(w.calls == 1);
  b.complete(gb, swp::Clock::now());
  CHECK(w.calls == 3);
  // Another generation: removing it from b leaves no registration behind.
  const auto gb2 = b.arm(nullptr);
  REQUIRE(b.add_waiter(gb2, w));
  b.remove_waiter(w);
  b.complete(gb2, swp::Clock::now());
  CHECK(w.calls == 3);
}

TEST_CASE("a waiter may remove itself from inside its callback") {
  swp::Event event;
  struct SelfRemoving final : swp::EventWaiter {
    swp::Event* event = nullptr;
    swp::EventWait node{*this};
    int calls = 0;
    bool removed = true;
    void event_completed() noexcept override {
      ++calls;
      removed = event->remove_waiter(node);  // must return at once: this is the callback
      event->remove_waiter(*this);
    }
  } w;
  w.event = &event;
  const auto g = event.arm(nullptr);
  REQUIRE(event.add_waiter(g, w.node));
  event.complete(g, swp::Clock::now());
  CHECK(w.calls == 1);
  CHECK_FALSE(w.removed);
}

TEST_CASE("removing a waiter waits until its callback on another thread returned") {
  swp::Event event;
  Blocking w;
  swp::EventWait node(w);
  const auto g = event.arm(nullptr);
  REQUIRE(event.add_waiter(g, node));
  std::thread completer([&] { event.complete(g, swp::Clock::now()); });
  REQUIRE(await_flag(w.entered));
  std::atomic<bool> removed{false};
  bool result = true;
  bool finished_when_removed = false;
  std::thread remover([&] {
    result = event.remove_waiter(node);
    finished_when_removed = w.finished.load();
    removed = true;
  });
  std::this_thread::sleep_for(20ms);  // gives the remover time to reach remove_waiter
  const bool removed_before_release = removed.load();
  w.release = true;
  completer.join();
  remover.join();
  CHECK_FALSE(removed_before_release);
  CHECK_FALSE(result);  // completion took it
  CHECK(finished_when_removed);
}

TEST_CASE("a completion arriving while another thread calls waiters is not lost") {
  swp::Event event;
  Blocking first;
  Flag second;
  swp::EventWait first_node(first), second_node(second);
  const auto g1 = event.arm(nullptr);
  const auto g2 = event.arm(nullptr);
  REQUIRE(event.add_waiter(g1, first_node));
  REQUIRE(event.add_waiter(g2, second_node));
  std::thread completer([&] { event.complete(g1, swp::Clock::now()); });
  REQUIRE(await_flag(first.entered));
  event.complete(g2, swp::Clock::now());  // leaves `second` to the thread already calling
  const int second_calls_meanwhile = second.calls;
  CHECK(event.query());
  first.release = true;
  completer.join();
  CHECK(second_calls_meanwhile == 0);
  CHECK(second.calls == 1);
}

TEST_CASE("completing events and registering and removing waiters allocates nothing after warm-up") {
  swp::Event first, second;
  Flag a, b, c;
  swp::EventWait wa(a), wb(b);
  auto cycle = [&] {
    const auto g1 = first.arm(nullptr);
    const auto g2 = second.arm(nullptr);
    first.add_waiter(g1, wa);
    first.add_waiter(g1, wb);
    first.add_waiter(g1, c);  // c watches both events, as the engines' device waker
    second.add_waiter(g2, c);
    first.remove_waiter(wb);  // b gives up
    first.complete(g1, swp::Clock::now());  // wakes a and c
    first.remove_waiter(wa);  // completion took it already: frees the node for the next cycle
    second.remove_waiter(c);  // c gives up on the second event
    second.complete(g2, swp::Clock::now());
  };
  cycle();  // warm-up: each event's pool gets its node for the by-reference registration
  constexpr int cycles = 1000;
  std::size_t allocations = 0;
  {
    swp::test::AllocationCount count;
    for (int i = 0; i < cycles; ++i) cycle();
    allocations = count.stop();
  }
  CHECK(allocations == 0);
  CHECK(a.calls == cycles + 1);
  CHECK(b.calls == 0);
  CHECK(c.calls == cycles + 1);
}

TEST_CASE("a failed generation wakes its waiters and says why; the others stay healthy") {
  swp::Event e;
  Flag waiter;
  const auto g1 = e.arm(nullptr);
  const auto g2 = e.arm(nullptr);
  REQUIRE(e.add_waiter(g2, waiter));
  e.complete(g1, swp::Clock::now());
  CHECK(e.error(g1) == nullptr);
  e.fail(g2, swp::Clock::now(), std::make_exception_ptr(std::runtime_error("device fault")));
  CHECK(waiter.calls.load() == 1);
  CHECK(e.reached(g2));
  CHECK(e.error(g1) == nullptr);
  REQUIRE(e.error(g2) != nullptr);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(e.error(g2)), "device fault", std::runtime_error);
  const auto g3 = e.arm(nullptr);
  CHECK(e.error(g3) == nullptr);  // not failed (not even reached)
}

}  // namespace test_event
