#include "swp/lazy/segment.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/lazy/lazy_scheduler.hpp"

namespace test_segment {  // each test file's names apart (unity builds)

namespace {

using Order = std::vector<std::string>;

int doubled(int x) { return 2 * x; }

struct Counter {
  int calls = 0;
  int bump(int by) { return calls += by; }
  [[nodiscard]] int peek() const { return calls; }
};

// Step code shared between programs: it names the segment by its signature only.
swp::Deferred<int> twice(const swp::Segment<int(int)>& seg, int x) { return seg(seg(x)); }

// A member holding a segment, whatever callable it wraps.
struct Model {
  swp::Segment<int(int)> forward;
  swp::Segment<void()> step;
};

}  // namespace

// Segments of one signature have one nameable type, whatever callable they wrap; the old
// spelling (the callable's type) still works and converts to it.
static_assert(std::is_default_constructible_v<swp::Segment<int(int)>>);
static_assert(std::is_copy_assignable_v<swp::Segment<int(int)>>);
static_assert(std::is_convertible_v<swp::Segment<int (*)(int)>, swp::Segment<int(int)>>);
static_assert(std::is_convertible_v<swp::Segment<std::function<int(int)>>, swp::Segment<int(int)>>);
static_assert(!std::is_convertible_v<swp::Segment<int (*)(int)>, swp::Segment<int(long)>>);
static_assert(std::is_same_v<swp::Segment<std::function<void(int&)>>::signature, void(int&)>);

TEST_CASE("a segment wraps a function pointer, a lambda, a functor or a member function") {
  swp::LazyScheduler sched;
  Counter counter;
  auto f = sched.register_segment("doubled", &doubled);
  auto l = sched.register_segment("lambda", [](int a, int b) { return a - b; });
  auto m = sched.register_segment("bump", &Counter::bump, counter);
  auto c = sched.register_segment("peek", &Counter::peek, std::as_const(counter));
  CHECK(f(4).get() == 8);
  CHECK(l(5, 2).get() == 3);
  CHECK(m(3).get() == 3);
  CHECK(m(f(1)).get() == 5);  // a Deferred argument
  CHECK(c().get() == 5);
  CHECK(counter.calls == 5);
  CHECK(m.name() == "bump");
  CHECK(sched.executed_order() == Order{"doubled", "lambda", "bump", "doubled", "bump", "peek"});
  // Made by register_segment only: the constructors take the scheduler's core.
  using Lambda = int (*)(int);
  static_assert(!std::is_constructible_v<swp::Segment<Lambda>, swp::detail::LazyCore&,
                                         std::uint32_t, Lambda>);
  static_assert(!std::is_constructible_v<swp::Segment<int(int)>, swp::detail::LazyCore&,
                                         std::uint32_t, Lambda>);
}

TEST_CASE(
    "a segment is named by its signature: step code and members take swp::Segment<R(A...)> "
    "whatever callable it wraps, and every handle calls the same registered segment") {
  swp::LazyScheduler sched({.schedule = {"lambda", "doubled"}});
  Counter counter;
  auto f = sched.register_segment("doubled", &doubled);
  auto l = sched.register_segment("lambda", [](int x) { return x + 1; });
  auto m = sched.register_segment("bump", &Counter::bump, counter);
  swp::Segment<int(int)> fn = sched.register_segment("fn", std::function<int(int)>(doubled));

  // One function, four kinds of callable: no decltype, no template.
  CHECK(twice(m, 2).get() == 4);  // bump(2), then bump(2) again
  CHECK(twice(fn, 3).get() == 12);
  sched.flush();
  // Through the handle the schedule still applies: "doubled" waits for "lambda".
  swp::Segment<int(int)> handle = f;
  auto held = handle(5);
  CHECK_FALSE(held.is_ready());
  CHECK(l(1).get() == 2);
  CHECK(held.is_ready());  // ran right after lambda
  CHECK(held.get() == 10);
  CHECK(handle.name() == "doubled");
  sched.flush();
  CHECK(sched.executed_order() == Order{"lambda", "doubled"});

  Model model{.forward = l, .step = sched.register_segment("step", [] {})};
  model.forward = m;  // reassigned to a segment of another callable type
  CHECK(model.forward(1).get() == 5);
  model.step();
  CHECK(sched.executed_order() == Order{"bump", "step"});
  std::vector<swp::Segment<int(int)>> handles{f, l, m, fn};
  CHECK(handles[3].name() == "fn");
}

TEST_CASE("an empty segment handle is false and throws LazyError when called or named") {
  swp::Segment<int(int)> empty;
  CHECK_FALSE(empty);
  CHECK_THROWS_AS((void)empty(1), swp::LazyError);
  CHECK_THROWS_AS((void)empty.name(), swp::LazyError);
  swp::LazyScheduler sched;
  empty = sched.register_segment("doubled", &doubled);
  CHECK(empty);
  CHECK(empty(2).get() == 4);
}

TEST_CASE("set_backward pairs segments held by their signature handles") {
  swp::LazyScheduler sched;
  swp::Segment<int(int)> square = sched.register_segment("square", [](int x) { return x * x; });
  swp::Segment<int(int, int)> square_bwd = sched.register_segment(
      "square_bwd", [](int grad, int x) { return 2 * x * grad; }, {.is_backward = true});
  square.set_backward(square_bwd);
  CHECK(square(3).get() == 9);
  CHECK(sched.backward(1).get() == 6);
  CHECK(sched.executed_order() == Order{"square", "square_bwd"});
  swp::Segment<int(int)> empty;
  CHECK_THROWS_AS(empty.set_backward(square_bwd), swp::LazyError);
}

TEST_CASE(
    "a delayed segment that writes its input marks its Deferred mutated; reading that input "
    "before it runs is an error naming both segments") {
  swp::LazyScheduler sched;
  auto scale = sched.register_segment("scale", [](std::vector<int>& v) {
    for (int& x : v) x *= 2;
    return v.size();
  });
  auto sum = sched.register_segment(
      "sum", [](const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); });
  auto step = sched.register_segment("step", [] {});
  sched.register_segment_pre_hook("step", "scale");  // scale is held until step

  std::vector<int> buf{1, 2, 3};
  auto d = scale(buf);
  CHECK_FALSE(d.is_ready());
  CHECK(d.mutated());
  try {
    (void)sum(buf);
    FAIL("reading buf while scale is stored must fail");
  } catch (const swp::HazardError& e) {
    CHECK(e.segments() == Order{"sum", "scale"});
    const std::string what = e.what();
    CHECK(what.find("'sum'") != std::string::npos);
    CHECK(what.find("'scale'") != std::string::npos);
  }
  CHECK(buf == std::vector<int>{1, 2, 3});  // nothing ran
  CHECK(d.get() == 3u);                     // materialise: now the read is safe
  CHECK(sum(buf).get() == 12);
  step();
  sched.flush();

  // A writer that runs at once leaves nothing pending: reading its input right after is fine.
  auto d2 = scale(buf);
  step();  // scale (held) runs right before step
  CHECK(d2.is_ready());
  CHECK(sum(buf).get() == 24);
  sched.flush();
}

TEST_CASE("debug mode runs a delayed segment twice and reports outputs that changed in between") {
  // The RFC's [A, B, A]: A is delayed past B; B mutates, through a shared handle, what A reads.
  for (const bool debug : {false, true}) {
    CAPTURE(debug);
    swp::LazyScheduler sched({.debug = debug});
    int a_runs = 0;
    auto value = std::make_shared<int>(1);
    auto a = sched.register_segment("A", [&a_runs](std::vector<int>& out, std::shared_ptr<int> p) {
      ++a_runs;
      out.push_back(*p);
      return *p * 10;
    });
    auto b = sched.register_segment("B", [](std::shared_ptr<int> p, int v) { *p = v; });
    auto c = sched.register_segment("C", [] {});
    sched.register_segment_pre_hook("C", "A");  // A runs right before C: after B

    SUBCASE("a clean program: B leaves A's inputs alone") {
      std::vector<int> out;
      auto ra = a(out, value);
      b(std::make_shared<int>(0), 7);  // another object
      c();
      CHECK(ra.get() == 10);
      CHECK(out == std::vector<int>{1});  // the shadow run wrote a copy, not `out`
      CHECK(sched.debug_findings().empty());
      CHECK(a_runs == (debug ? 2 : 1));  // twice only in debug mode
    }
    SUBCASE("a planted hazard: B writes what delayed A reads") {
      std::vector<int> out;
      auto ra = a(out, value);
      b(value, 5);
      c();
      CHECK(ra.get() == 50);  // the delayed run saw B's write
      CHECK(a_runs == (debug ? 2 : 1));
      if (debug) {
        const auto& f = sched.debug_findings();
        REQUIRE(f.size() == 2);
        CHECK(f[0].segment == "A");
        CHECK(f[0].output == "result");
        CHECK(f[1].segment == "A");
        CHECK(f[1].output == "input 0");
      } else {
        CHECK(sched.debug_findings().empty());  // off by default: nothing checked
      }
    }
    sched.flush();
  }
}

TEST_CASE("debug mode does not run a delayed segment that writes declared state twice") {
  for (const bool debug : {false, true}) {
    CAPTURE(debug);
    swp::LazyScheduler sched({.debug = debug});
    int steps = 0;  // private to "opt": accepted for a delayed segment
    auto s = sched.declare_state("steps", steps);
    auto opt = sched.register_segment("opt",
                                      [s](int lr) {
                                        s.write() += 1;
                                        return lr;
                                      },
                                      {.writes = {s}});
    auto bwd = sched.register_segment("bwd", [](int g) { return g; });
    sched.register_segment_pre_hook("bwd", "opt");
    for (int round = 0; round < 3; ++round) {
      auto o = opt(1);  // held: runs right before bwd
      CHECK_FALSE(o.is_ready());
      (void)bwd(2);
      CHECK(o.get() == 1);
      sched.flush();
    }
    CHECK(steps == 3);  // the same result with debug mode on or off
    CHECK(sched.debug_findings().empty());
  }
}

TEST_CASE("a segment may write an input of a type that cannot be copied; debug mode skips it") {
  for (const bool debug : {false, true}) {
    CAPTURE(debug);
    swp::LazyScheduler sched({.debug = debug});
    int runs = 0;
    auto reset = sched.register_segment("reset", [&runs](std::unique_ptr<int>& p) {
      ++runs;
      p.reset();
    });
    auto step = sched.register_segment("step", [] {});
    auto now = std::make_unique<int>(1);
    reset(now).get();  // nothing orders it: runs at once
    CHECK(now == nullptr);
    sched.register_segment_pre_hook("step", "reset");
    auto later = std::make_unique<int>(2);
    auto held = reset(later);  // held: debug mode cannot copy it for a shadow run
    CHECK_FALSE(held.is_ready());
    CHECK(later != nullptr);
    step();
    CHECK(later == nullptr);
    CHECK(runs == 2);  // once per call, debug mode or not
    CHECK(sched.debug_findings().empty());
    sched.flush();
  }
}

TEST_CASE("a segment that runs at once is not double-run, even in debug mode") {
  swp::LazyScheduler sched({.debug = true});
  int runs = 0;
  auto a = sched.register_segment("A", [&runs](int x) {
    ++runs;
    return x;
  });
  CHECK(a(1).get() == 1);
  CHECK(runs == 1);
}

}  // namespace test_segment
