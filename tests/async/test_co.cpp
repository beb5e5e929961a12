#include "swp/async/co.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "swp/async/sync_wait.hpp"

namespace test_co {  // each test file's names apart (unity builds)

namespace {

swp::Co<int> forty_two() { co_return 42; }

swp::Co<int> add(int a, int b) { co_return co_await forty_two() - 42 + a + b; }

swp::Co<void> fail(std::string why) {  // by value: a coroutine outlives its call
  throw std::runtime_error(why);
  co_return;
}

// Counts live instances, to check that frames destroy their locals.
struct Counted {
  static inline int alive = 0;
  Counted() { ++alive; }
  Counted(const Counted&) { ++alive; }
  ~Counted() { --alive; }
};

swp::Co<int> hold_counted() {
  Counted c;
  co_return Counted::alive;
}

swp::Co<long> sum_chain(int n) {
  long total = 0;
  for (int i = 0; i < n; ++i) total += co_await forty_two();
  co_return total;
}

swp::Co<int> recurse(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await recurse(depth - 1);
}

}  // namespace

static_assert(std::is_move_constructible_v<swp::Co<int>>);
static_assert(!std::is_copy_constructible_v<swp::Co<int>>);

TEST_CASE("a Co is lazy and produces its value when awaited") {
  bool ran = false;
  auto body = [&]() -> swp::Co<int> {
    ran = true;
    co_return 7;
  };
  auto co = body();
  CHECK_FALSE(ran);
  CHECK(swp::sync_wait(std::move(co)) == 7);
  CHECK(ran);
}

TEST_CASE("awaiting nested Co values composes their results") {
  CHECK(swp::sync_wait(add(1, 2)) == 3);
  CHECK(swp::sync_wait(recurse(100)) == 100);
}

TEST_CASE("an exception in a Co is rethrown by the awaiting side") {
  auto outer = []() -> swp::Co<std::string> {
    try {
      co_await fail("boom");
    } catch (const std::runtime_error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not thrown";
  };
  CHECK(swp::sync_wait(outer()) == "caught boom");
  CHECK_THROWS_WITH_AS(swp::sync_wait(fail("direct")), "direct", std::runtime_error);
}

TEST_CASE("symmetric transfer keeps a long loop of awaits from growing the stack") {
  // One million synchronous completions: without symmetric transfer each would nest a frame of
  // resume() calls and overflow the stack.
  CHECK(swp::sync_wait(sum_chain(1'000'000)) == 42L * 1'000'000);
}

TEST_CASE("frames destroy their locals, finished or never started") {
  CHECK(swp::sync_wait(hold_counted()) == 1);
  CHECK(Counted::alive == 0);
  {
    auto never_started = hold_counted();
    CHECK(never_started.valid());
  }
  CHECK(Counted::alive == 0);
}

TEST_CASE("a root Co reports completion and its error to the completion callback") {
  struct Result {
    bool called = false;
    bool failed = false;
  } result;
  auto co = fail("root");
  co.start(
      nullptr,
      [](void* context, std::exception_ptr& error) noexcept {
        auto* r = static_cast<Result*>(context);
        r->called = true;
        r->failed = static_cast<bool>(error);
      },
      &result);
  CHECK(result.called);
  CHECK(result.failed);
  CHECK(co.done());
  CHECK_THROWS_AS(co.result(), std::runtime_error);
}

}  // namespace test_co
