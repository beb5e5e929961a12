#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "swp/lazy/lazy_scheduler.hpp"

namespace test_lazy_scheduler {  // each test file's names apart (unity builds)

namespace {

using Order = std::vector<std::string>;

// A program of three segments called in the order a, b, c, each logging when its body runs.
struct Program {
  Order ran;
  swp::LazyScheduler sched;
  explicit Program(swp::LazyOptions options = {}) : sched(std::move(options)) {}
  auto make(const std::string& name) {
    return sched.register_segment(name, [this, name](int x) {
      ran.push_back(name);
      return x + 1;
    });
  }
};

struct OverArch {
  int func1(int x) { return x > 0 ? x : 0; }
  int func2(int x) { return x * x; }
  int func1_backward(int grad, int x) { return x > 0 ? grad : 0; }
  int func2_backward(int grad, int x) { return 2 * x * grad; }
};

}  // namespace

TEST_CASE("segments no schedule names run at once and return ready values") {
  Program p;
  auto a = p.make("a");
  auto b = p.make("b");
  auto x = a(1);
  CHECK(x.is_ready());
  CHECK(p.ran == Order{"a"});
  auto y = b(x);  // a Deferred argument: b depends on a
  CHECK(y.get() == 3);
  CHECK(p.sched.executed_order() == Order{"a", "b"});
}

TEST_CASE(
    "an explicit schedule reorders calls: a later call runs first, the earlier one is stored") {
  Program p({.schedule = {"c", "a"}});
  auto a = p.make("a");
  auto b = p.make("b");
  auto c = p.make("c");
  auto ra = a(10);  // its predecessor c was not called yet: stored
  CHECK_FALSE(ra.is_ready());
  auto rb = b(20);  // unconstrained: runs at once
  CHECK(rb.is_ready());
  CHECK(p.ran == Order{"b"});
  auto rc = c(30);  // runs, then the stored a becomes schedulable and runs right after it
  CHECK(p.ran == Order{"b", "c", "a"});
  CHECK(ra.is_ready());
  CHECK(ra.get() == 11);
  CHECK(rc.get() == 31);
  p.sched.flush();
  CHECK(p.sched.executed_order() == Order{"b", "c", "a"});
}

TEST_CASE("the schedule's order holds for several stored segments, and rounds repeat it") {
  Program p({.schedule = {"c", "b", "a"}});
  auto a = p.make("a");
  auto b = p.make("b");
  auto c = p.make("c");
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    p.ran.clear();
    auto ra = a(1);
    auto rb = b(2);
    CHECK(p.ran.empty());  // both stored: c has not been called
    auto rc = c(3);
    CHECK(p.ran == Order{"c", "b", "a"});
    p.sched.flush();
  }
}

TEST_CASE("a segment called in schedule order runs at once") {
  Program p({.schedule = {"a", "b"}});
  auto a = p.make("a");
  auto b = p.make("b");
  CHECK(a(0).is_ready());
  CHECK(b(0).is_ready());
  CHECK(p.ran == Order{"a", "b"});
}

TEST_CASE("reading a stored segment's value materialises it at once") {
  Program p({.schedule = {"c", "a"}});
  auto a = p.make("a");
  auto b = p.make("b");
  auto c = p.make("c");
  auto ra = a(5);
  CHECK_FALSE(ra.is_ready());
  SUBCASE("from plain code, when its predecessor was called") {
    // c is stored too? No: c has no predecessor and is not held, so it ran at its call.
    auto rc = c(0);
    CHECK(p.ran == Order{"c", "a"});
    CHECK(ra.get() == 6);
  }
  SUBCASE("a segment reading it: the producer runs first") {
    auto rc = c(0);
    auto rb = b(ra);
    CHECK(rb.get() == 7);
    CHECK(p.ran == Order{"c", "a", "b"});
  }
  SUBCASE("before its predecessor was called: an error naming both") {
    try {
      (void)ra.get();
      FAIL("materialising a without c should throw");
    } catch (const swp::LazyError& e) {
      const std::string what = e.what();
      CHECK(what.find("'a'") != std::string::npos);
      CHECK(what.find("'c'") != std::string::npos);
    }
    (void)c(0);  // the round can still complete
  }
  p.sched.flush();
}

TEST_CASE("a backward pre-hook runs its segment right before the target, in the backward pass") {
  // The RFC's scenario: sdd_fwd is called in forward but runs right before overarch_func2_bwd.
  OverArch overarch;
  Order ran;
  swp::LazyScheduler sched;
  auto sdd = sched.register_segment("sdd_fwd", [&ran](int ids) {
    ran.push_back("sdd_fwd");
    return ids * 100;
  });
  auto f1 = sched.register_segment("overarch_func1", &OverArch::func1, overarch);
  auto f2 = sched.register_segment("overarch_func2", &OverArch::func2, overarch);
  auto f1_bwd = sched.register_segment("overarch_func1_bwd", &OverArch::func1_backward, overarch,
                                       {.is_backward = true});
  auto f2_bwd = sched.register_segment("overarch_func2_bwd", &OverArch::func2_backward, overarch,
                                       {.is_backward = true});
  f1.set_backward(f1_bwd);
  f2.set_backward(f2_bwd);
  sched.register_segment_backward_pre_hook("overarch_func2_bwd", "sdd_fwd");

  for (int iter = 0; iter < 2; ++iter) {
    CAPTURE(iter);
    auto h = f1(3);
    auto emb = sdd(7);  // held until overarch_func2_bwd is called
    auto out = f2(h);
    CHECK(out.get() == 9);
    CHECK_FALSE(emb.is_ready());
    auto grad = sched.backward(1);
    CHECK(grad.get() == 6);  // d/dx (relu(x))^2 at 3
    CHECK(emb.get() == 700);
    CHECK(sched.executed_order() == Order{"overarch_func1", "overarch_func2", "sdd_fwd",
                                          "overarch_func2_bwd", "overarch_func1_bwd"});
    sched.flush();
  }
  CHECK(ran == Order{"sdd_fwd", "sdd_fwd"});
}

TEST_CASE(
    "a held pre-hook stays held when its schedule successor is called: both wait for its "
    "target") {
  Program p({.schedule = {"comm", "compute"}});
  auto comm = p.make("comm");
  auto compute = p.make("compute");
  auto bwd = p.make("bwd");
  p.sched.register_segment_pre_hook("bwd", "comm");  // comm held until bwd is called
  auto c = comm(1);
  auto y = compute(2);  // its predecessor is held: stored too
  CHECK_FALSE(c.is_ready());
  CHECK_FALSE(y.is_ready());
  CHECK(p.ran.empty());
  auto g = bwd(3);  // comm runs right before bwd, then compute after comm
  CHECK(p.ran == Order{"comm", "bwd", "compute"});
  CHECK(y.get() == 3);
  p.sched.flush();
  // Reading the successor's value releases the hold (RFC problem 1): comm, then compute.
  auto c2 = comm(1);
  auto y2 = compute(2);
  CHECK(y2.get() == 3);
  CHECK(c2.is_ready());
  p.sched.flush();
  CHECK(p.sched.executed_order() == Order{"comm", "compute"});
}

TEST_CASE("a held pre-hook whose target is never called runs when the round ends") {
  Program p;
  auto a = p.make("a");
  auto b = p.make("b");
  p.sched.register_segment_pre_hook("b", "a");
  auto ra = a(1);
  CHECK_FALSE(ra.is_ready());
  p.sched.flush();
  CHECK(ra.get() == 2);
  CHECK(p.ran == Order{"a"});
}

TEST_CASE("a stored segment whose predecessor is never called fails the round, naming both") {
  Program p({.schedule = {"c", "a"}});
  auto a = p.make("a");
  (void)p.make("c");
  auto ra = a(1);
  CHECK_THROWS_WITH_AS(p.sched.flush(), doctest::Contains("'c'"), swp::LazyError);
  CHECK_THROWS_AS((void)ra.get(), swp::LazyError);  // its Deferred fails, it does not hang
  CHECK(p.ran.empty());
}

TEST_CASE(
    "a round that fails for a stored segment still runs the held pre-hook that can run, in "
    "either call order") {
  for (const bool hook_called_first : {false, true}) {
    CAPTURE(hook_called_first);
    Program p({.schedule = {"v", "x"}});
    (void)p.make("v");
    auto x = p.make("x");
    (void)p.make("t");
    auto pre = p.make("p");
    p.sched.register_segment_pre_hook("t", "p");  // p held until t, which never comes
    swp::Deferred<int> rx, rp;
    if (hook_called_first) {
      rp = pre(1);
      rx = x(1);  // stored: v is never called
    } else {
      rx = x(1);
      rp = pre(1);
    }
    CHECK_THROWS_WITH_AS(p.sched.flush(), doctest::Contains("'v'"), swp::LazyError);
    CHECK(rp.get() == 2);  // the held pre-hook ran when the round ended
    CHECK_THROWS_WITH_AS((void)rx.get(), doctest::Contains("'x'"), swp::LazyError);
    CHECK(p.ran == Order{"p"});
  }
}

TEST_CASE(
    "a stored call whose input's producer cannot run yet stays stored; the call that let it "
    "run keeps its value") {
  Program p({.schedule = {"v", "w"}});
  auto v = p.make("v");
  auto w = p.make("w");
  auto a = p.make("a");
  auto x = p.make("x");
  p.sched.register_segment_pre_hook("x", "a");  // a runs right before x
  auto rw = w(1);                               // stored: v not called yet
  auto rx = x(rw);                              // stored: waits for a, and reads w
  auto ra = a(10);  // runs; x may follow it, but x's input (w) cannot run yet
  CHECK(ra.get() == 11);
  CHECK_FALSE(rx.is_ready());
  CHECK(p.ran == Order{"a"});
  (void)v(0);  // now w can run, then x
  CHECK(rx.get() == 3);
  CHECK(p.ran == Order{"a", "v", "w", "x"});
  p.sched.flush();
}

TEST_CASE(
    "a call that could run at once but reads a pending input whose producer cannot run is "
    "stored, not failed") {
  Program p({.schedule = {"v", "w"}});
  auto v = p.make("v");
  auto w = p.make("w");
  auto y = p.make("y");
  auto t = p.make("t");
  p.sched.register_segment_pre_hook("t", "y");  // y runs right before t
  auto rt = t(0);                               // stored: waits for y
  auto rw = w(1);                               // stored: v not called yet
  auto ry = y(rw);  // not held (t was called), nothing before it: only its input waits
  CHECK_FALSE(ry.is_ready());
  CHECK(p.ran.empty());
  (void)v(0);
  CHECK(ry.get() == 3);
  CHECK(rt.get() == 1);
  CHECK(p.ran == Order{"v", "w", "y", "t"});
  p.sched.flush();
}

TEST_CASE("a stored call whose input waits for it through the schedule is a cycle, not a crash") {
  Program p({.schedule = {"x", "y"}});
  auto x = p.make("x");
  auto y = p.make("y");
  auto ry = y(1);   // stored: x not called yet
  auto rx = x(ry);  // x reads y, which the schedule runs after x
  CHECK_FALSE(rx.is_ready());
  CHECK_THROWS_WITH_AS((void)rx.get(), doctest::Contains("cycle"), swp::LazyError);
  CHECK_THROWS_WITH_AS(p.sched.flush(), doctest::Contains("cycle"), swp::LazyError);
  CHECK_THROWS_AS((void)ry.get(), swp::LazyError);  // failed with the round: nothing hangs
  CHECK(p.ran.empty());
}

TEST_CASE("unknown segment names in a schedule or a hook are errors naming them") {
  Program p({.schedule = {"a", "nope"}});
  auto a = p.make("a");
  CHECK_THROWS_WITH_AS(p.sched.validate(), doctest::Contains("'nope'"), swp::LazyError);
  CHECK_THROWS_WITH_AS((void)a(1), doctest::Contains("'nope'"), swp::LazyError);
  Program q;
  (void)q.make("a");
  CHECK_THROWS_WITH_AS(q.sched.register_segment_pre_hook("a", "ghost"),
                       doctest::Contains("'ghost'"), swp::LazyError);
  CHECK_THROWS_WITH_AS(q.sched.register_segment_pre_hook("phantom", "a"),
                       doctest::Contains("'phantom'"), swp::LazyError);
  CHECK_THROWS_WITH_AS(q.sched.register_segment_backward_pre_hook("a", "spectre"),
                       doctest::Contains("'spectre'"), swp::LazyError);
  CHECK_THROWS_WITH_AS(q.sched.register_segment_backward_pre_hook("a", "a"),
                       doctest::Contains("'a'"), swp::LazyError);
}

TEST_CASE(
    "a hook or segment registered before every schedule name is registered is accepted; the "
    "names are checked at validate() and the first call") {
  Program p({.schedule = {"fwd", "opt"}});
  auto fwd = p.make("fwd");
  auto comm = p.make("comm");
  CHECK_NOTHROW(p.sched.register_segment_pre_hook("fwd", "comm"));  // "opt" comes later
  CHECK_NOTHROW((void)p.make("other"));
  CHECK_THROWS_WITH_AS(p.sched.validate(), doctest::Contains("'opt'"), swp::LazyError);
  CHECK_THROWS_WITH_AS((void)fwd(1), doctest::Contains("'opt'"), swp::LazyError);
  auto opt = p.make("opt");
  CHECK_NOTHROW(p.sched.validate());
  auto ro = opt(5);   // stored: fwd not called yet
  auto rc = comm(0);  // held until fwd
  CHECK_FALSE(ro.is_ready());
  CHECK(fwd(1).get() == 2);  // comm runs right before fwd, then opt
  CHECK(ro.get() == 6);
  CHECK(rc.get() == 1);
  CHECK(p.ran == Order{"comm", "fwd", "opt"});
  p.sched.flush();
}

TEST_CASE("hooks forming a cycle are refused, printing the cycle") {
  Program p;
  (void)p.make("a");
  (void)p.make("b");
  (void)p.make("c");
  p.sched.register_segment_pre_hook("b", "a");  // a before b
  p.sched.register_segment_pre_hook("c", "b");  // b before c
  try {
    p.sched.register_segment_pre_hook("a", "c");  // c before a: a cycle
    FAIL("a cycle should be refused");
  } catch (const swp::LazyError& e) {
    const std::string what = e.what();
    CHECK(what.find("cycle") != std::string::npos);
    // The cycle in "runs before" order, from whichever segment the search met first.
    const bool printed = what.find("a -> b -> c -> a") != std::string::npos ||
                         what.find("b -> c -> a -> b") != std::string::npos ||
                         what.find("c -> a -> b -> c") != std::string::npos;
    CHECK_MESSAGE(printed, what);
  }
  // The refused hook left no trace: the scheduler still works.
  auto a = p.make("d");
  CHECK(a(1).get() == 2);
}

TEST_CASE("a registration refused for a state hazard leaves the scheduler as it was") {
  swp::LazyScheduler sched;
  int table = 0;
  auto t = sched.declare_state("table", table);
  auto target = sched.register_segment("target", [](int x) { return x; });
  auto pre = sched.register_segment("pre",
                                    [t](int x) {
                                      t.write() = x;
                                      return x;
                                    },
                                    {.writes = {t}});
  sched.register_segment_pre_hook("target", "pre");  // pre may be delayed and writes 'table'
  CHECK_THROWS_WITH_AS(
      sched.register_segment("reader", [t](int) { return t.read(); }, {.reads = {t}}),
      doctest::Contains("'reader'"), swp::HazardError);
  // The name is free again, and the scheduler still works.
  auto reader = sched.register_segment("reader", [](int x) { return x + 1; });
  CHECK(reader(1).get() == 2);
  CHECK_NOTHROW(sched.validate());
  auto held = pre(5);
  CHECK_FALSE(held.is_ready());
  CHECK(target(2).get() == 2);
  CHECK(held.get() == 5);
  CHECK(table == 5);
  sched.flush();
}

TEST_CASE("a forward segment that failed is not replayed by backward") {
  OverArch overarch;
  swp::LazyScheduler sched;
  auto f1 = sched.register_segment("overarch_func1", &OverArch::func1, overarch);
  auto f2 = sched.register_segment("overarch_func2", [&overarch](int x) {
    if (x < 0) throw std::runtime_error("negative input");
    return overarch.func2(x);
  });
  auto f1_bwd = sched.register_segment("overarch_func1_bwd", &OverArch::func1_backward, overarch,
                                       {.is_backward = true});
  auto f2_bwd = sched.register_segment("overarch_func2_bwd", &OverArch::func2_backward, overarch,
                                       {.is_backward = true});
  f1.set_backward(f1_bwd);
  f2.set_backward(f2_bwd);
  SUBCASE("one that failed within its call leaves no tape entry") {
    CHECK(f1(3).get() == 3);
    CHECK_THROWS_AS(f2(-1), swp::SegmentError);
    auto grad = sched.backward(1);
    CHECK(grad.get() == 1);  // f1's backward alone (f2's would have made it -2)
    CHECK(sched.executed_order() ==
          Order{"overarch_func1", "overarch_func2", "overarch_func1_bwd"});  // no func2_bwd
  }
  SUBCASE("one stored that failed later makes backward fail naming it") {
    sched.register_segment_pre_hook("overarch_func1", "overarch_func2");
    auto out = f2(-1);  // held until overarch_func1 is called
    CHECK_FALSE(out.is_ready());
    CHECK(f1(3).get() == 3);  // runs f2 first, which fails into its Deferred
    CHECK_THROWS_AS(out.get(), swp::SegmentError);
    CHECK_THROWS_WITH_AS(sched.backward(1),
                         doctest::Contains("forward segment 'overarch_func2' failed"),
                         swp::LazyError);
  }
  sched.flush();
}

TEST_CASE("a backward segment cannot be called from forward code") {
  swp::LazyScheduler sched;
  auto bwd = sched.register_segment("b_bwd", [](int g) { return g; }, {.is_backward = true});
  CHECK_THROWS_WITH_AS((void)bwd(1), doctest::Contains("'b_bwd'"), swp::LazyError);
  CHECK_THROWS_AS(sched.register_segment("b_bwd", [](int g) { return g; }), swp::LazyError);
}

TEST_CASE("a constrained segment called twice in a round is an error naming it") {
  Program p({.schedule = {"a", "b"}});
  auto a = p.make("a");
  (void)p.make("b");
  (void)a(1);
  CHECK_THROWS_WITH_AS((void)a(2), doctest::Contains("'a'"), swp::LazyError);
}

TEST_CASE("an empty Deferred argument is refused naming the segment and input; nothing is run") {
  Program p({.schedule = {"a", "b"}});
  auto a = p.make("a");
  auto b = p.make("b");
  CHECK_THROWS_WITH_AS((void)a(swp::Deferred<int>()),
                       doctest::Contains("segment 'a': input 0 is an empty"), swp::LazyError);
  CHECK(a(1).get() == 2);  // not marked as called: this is its round's one call
  CHECK(b(2).get() == 3);
  CHECK(p.ran == Order{"a", "b"});
  p.sched.flush();
}

TEST_CASE("a scheduler serves one round at a time; a round left unfinished fails what it stored") {
  Program p({.schedule = {"c", "a"}});
  auto a = p.make("a");
  (void)p.make("c");
  swp::Deferred<int> ra;
  {
    auto round = p.sched.round({.task = 0, .iter = 1});
    CHECK_THROWS_WITH_AS((void)p.sched.round(), doctest::Contains("one scheduler per task"),
                         swp::LazyError);
    ra = a(1);  // stored: c is never called in this round
  }             // destroyed unfinished (as when a task body throws)
  CHECK_THROWS_WITH_AS((void)ra.get(), doctest::Contains("'a'"), swp::LazyError);
  auto next = p.sched.round({.task = 0, .iter = 2});  // the scheduler is usable again
  next.finish();
  CHECK(p.ran.empty());
}

TEST_CASE("round() refuses while calls since the last flush() were not ended, naming one") {
  Program p({.schedule = {"a", "b"}});
  auto a = p.make("a");
  auto b = p.make("b");
  (void)a(1);
  (void)b(2);  // both ran at once; the round was not flushed
  CHECK_THROWS_WITH_AS((void)p.sched.round(), doctest::Contains("'a'"), swp::LazyError);
  p.sched.flush();
  auto round = p.sched.round();  // accepted now, and a fresh round
  CHECK(a(3).get() == 4);
  CHECK(b(4).get() == 5);
  round.finish();
}

TEST_CASE(
    "executed_order lists the round's runs in the order they ran, and starts over with the next "
    "round (the docs/lazy.md example)") {
  swp::LazyScheduler sched;
  auto comm = sched.register_segment("comm", [](int x) { return x + 1; });
  auto compute = sched.register_segment("compute", [](int x) { return 2 * x; });
  auto bwd = sched.register_segment("bwd", [](int x, int c) { return x - c; });
  sched.register_segment_pre_hook("bwd", "comm");  // comm runs right before bwd

  auto c = comm(1);
  CHECK_FALSE(c.is_ready());
  CHECK(sched.executed_order().empty());
  auto y = compute(2);
  CHECK(sched.executed_order() == Order{"compute"});
  auto g = bwd(y, c);
  sched.flush();
  CHECK(g.get() == 2);  // 2 * 2 - (1 + 1)
  CHECK(sched.executed_order() == Order{"compute", "comm", "bwd"});
  (void)compute(3);
  CHECK(sched.executed_order() == Order{"compute"});
  sched.flush();

  // A round (a pipeline task's) starts the list too, even before anything runs.
  auto round = sched.round({.task = 0, .iter = 1});
  CHECK(sched.executed_order().empty());
  round.finish();
}

}  // namespace test_lazy_scheduler
