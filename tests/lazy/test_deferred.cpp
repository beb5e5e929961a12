#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/lazy/deferred.hpp"
#include "swp/lazy/lazy_scheduler.hpp"

namespace test_deferred {  // each test file's names apart (unity builds)

namespace {

using Order = std::vector<std::string>;

// Two segments: "late" is scheduled after "trigger", so calling it first stores it.
struct Fixture {
  Order ran;
  swp::LazyScheduler sched{{.schedule = {"trigger", "late"}}};
  swp::Segment<std::function<int(int)>> late =
      sched.register_segment("late", std::function<int(int)>([this](int x) {
                               ran.push_back("late");
                               return 2 * x;
                             }));
  swp::Segment<std::function<void(int)>> trigger = sched.register_segment(
      "trigger", std::function<void(int)>([this](int) { ran.push_back("trigger"); }));
};

swp::Co<int> read_in_coroutine(swp::Deferred<int> d) {
  const int& v = co_await d;
  co_return v + 1;
}

}  // namespace

static_assert(std::is_copy_constructible_v<swp::Deferred<int>>);

TEST_CASE("a ready Deferred holds a real value and wraps a Future") {
  auto d = swp::Deferred<std::string>::ready("x");
  CHECK(d.is_ready());
  CHECK(d.get() == "x");
  CHECK(d.future().ready());
  CHECK(d.segment().empty());
  CHECK_FALSE(d.mutated());
  auto v = swp::Deferred<void>::ready();
  CHECK(v.is_ready());
  CHECK_THROWS_AS(swp::Deferred<int>().materialise(), swp::LazyError);
  // A pending one is a segment's call's, an implementation type: users make ready ones only.
  static_assert(!std::is_constructible_v<swp::Deferred<int>, swp::Future<int>,
                                         std::shared_ptr<swp::detail::LazyCall>>);
}

TEST_CASE("get() from plain code materialises a delayed segment at once, and only once") {
  swp::LazyScheduler sched;
  Order ran;
  auto pre = sched.register_segment("pre", [&ran](int x) {
    ran.push_back("pre");
    return 2 * x;
  });
  auto target = sched.register_segment("target", [&ran] { ran.push_back("target"); });
  sched.register_segment_pre_hook("target", "pre");
  auto d = pre(21);
  CHECK_FALSE(d.is_ready());
  CHECK(ran.empty());
  CHECK(d.get() == 42);
  CHECK(ran == Order{"pre"});
  target();
  CHECK(ran == Order{"pre", "target"});
  sched.flush();
}

TEST_CASE("a stored segment's Deferred becomes ready when the schedule lets it run") {
  Fixture f;
  auto d = f.late(21);
  CHECK_FALSE(d.is_ready());
  CHECK(d.segment() == "late");
  CHECK(f.ran.empty());
  f.trigger(0);  // "late" runs right after its predecessor
  CHECK(f.ran == Order{"trigger", "late"});
  CHECK(d.get() == 42);
  f.sched.flush();
}

TEST_CASE("co_await in a coroutine materialises the delayed segment, then yields its value") {
  swp::LazyScheduler sched{{.schedule = {"a", "b"}}};
  Order ran;
  auto a = sched.register_segment("a", [&ran] { ran.push_back("a"); });
  auto b = sched.register_segment("b", [&ran](int x) {
    ran.push_back("b");
    return x * 3;
  });
  a();            // runs
  auto d = b(4);  // its predecessor ran: b runs at once too
  CHECK(d.is_ready());
  CHECK(swp::sync_wait(read_in_coroutine(d)) == 13);

  // A held segment: a pre-hook whose target is not called yet.
  sched.flush();
  swp::LazyScheduler held;
  Order log;
  auto pre = held.register_segment("pre", [&log](int x) {
    log.push_back("pre");
    return x;
  });
  (void)held.register_segment("target", [&log] { log.push_back("target"); });
  held.register_segment_pre_hook("target", "pre");
  auto p = pre(9);
  CHECK_FALSE(p.is_ready());
  CHECK(swp::sync_wait(read_in_coroutine(p)) == 10);
  CHECK(log == Order{"pre"});
  held.flush();
}

TEST_CASE("an exception in a delayed segment surfaces at materialisation, naming the segment") {
  swp::LazyScheduler sched;
  auto boom = sched.register_segment("boom", [](int) -> int { throw std::runtime_error("kaput"); });
  (void)sched.register_segment("after", [] {});
  sched.register_segment_pre_hook("after", "boom");
  auto d = boom(1);  // held: nothing thrown at the call
  CHECK_FALSE(d.is_ready());
  SUBCASE("get()") {
    try {
      (void)d.get();
      FAIL("get() should rethrow");
    } catch (const swp::SegmentError& e) {
      CHECK(e.segment() == "boom");
      CHECK(std::string(e.what()).find("kaput") != std::string::npos);
      CHECK_THROWS_WITH_AS(std::rethrow_if_nested(e), "kaput", std::runtime_error);
    }
    sched.flush();  // the error was read: the round ends cleanly
  }
  SUBCASE("co_await") {
    CHECK_THROWS_WITH_AS(swp::sync_wait(read_in_coroutine(d)), doctest::Contains("'boom'"),
                         swp::SegmentError);
    sched.flush();
  }
  SUBCASE("unread: the round's end reports it") {
    CHECK_THROWS_WITH_AS(sched.flush(), doctest::Contains("'boom'"), swp::SegmentError);
  }
}

TEST_CASE("a segment that fails at its own call throws there, naming it") {
  swp::LazyScheduler sched;
  auto bad = sched.register_segment("bad", [](int x) -> int {
    if (x < 0) throw std::invalid_argument("negative");
    return x;
  });
  CHECK(bad(1).get() == 1);
  CHECK_THROWS_WITH_AS((void)bad(-1), doctest::Contains("'bad'"), swp::SegmentError);
}

TEST_CASE("a stored call's Deferred names its segment after the scheduler is gone") {
  // The scheduler lives in storage wiped after its destruction, so a Deferred still reading it
  // would crash instead of (by chance) finding the old bytes.
  alignas(swp::LazyScheduler) unsigned char storage[sizeof(swp::LazyScheduler)];
  swp::Deferred<int> d;
  {
    auto* sched = new (storage) swp::LazyScheduler({.schedule = {"first", "a_long_segment_name"}});
    auto first = sched->register_segment("first", [](int x) { return x; });
    auto late = sched->register_segment("a_long_segment_name", [](int x) { return 2 * x; });
    d = late(3);  // stored: "first" not called yet
    CHECK_FALSE(d.is_ready());
    (void)first(1);  // runs it
    sched->flush();
    sched->~LazyScheduler();
    std::memset(storage, 0, sizeof(storage));
  }
  CHECK(d.get() == 6);
  CHECK(d.segment() == "a_long_segment_name");
}

}  // namespace test_deferred
