#include <doctest/doctest.h>

#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "swp/lazy/lazy_scheduler.hpp"
#include "swp/lazy/lazy_state.hpp"

namespace test_lazy_state {  // each test file's names apart (unity builds)

namespace {

using Table = std::map<int, int>;

}  // namespace

TEST_CASE(
    "a segment that may be delayed and reads state another segment writes is refused at "
    "registration, naming both") {
  swp::LazyScheduler sched;
  Table table;
  auto t = sched.declare_state("table", table);
  CHECK(t.name() == "table");
  // Made by declare_state only: its constructor takes the scheduler's core.
  static_assert(!std::is_constructible_v<swp::LazyState<Table>, swp::detail::LazyCore&,
                                         swp::StateId, Table&>);
  (void)sched.register_segment("update", [t](int k) { t.write()[k] = 1; }, {.writes = {t}});
  auto lookup = sched.register_segment(
      "lookup", [t](int k) { return static_cast<int>(t.read().count(k)); }, {.reads = {t}});
  auto step = sched.register_segment("step", [] {});
  try {
    sched.register_segment_pre_hook("step", "lookup");
    FAIL("lookup may not be delayed");
  } catch (const swp::HazardError& e) {
    CHECK(e.segments() == std::vector<std::string>{"lookup", "update"});
    CHECK(std::string(e.what()).find("'table'") != std::string::npos);
  }
  // The refused hook is gone: lookup still runs at once, and step too.
  table[7] = 1;
  auto found = lookup(7);
  CHECK(found.is_ready());
  CHECK(found.get() == 1);
  CHECK(step().is_ready());
}

TEST_CASE("a schedule that would delay a segment writing shared state fails at the first call") {
  swp::LazyScheduler sched({.schedule = {"lookup", "update"}});
  Table table;
  auto t = sched.declare_state("table", table);
  auto update = sched.register_segment("update", [t](int k) { t.write()[k] = 1; }, {.writes = {t}});
  (void)sched.register_segment("lookup", [t](int k) { return static_cast<int>(t.read().count(k)); },
                               {.reads = {t}});
  CHECK_THROWS_WITH_AS((void)update(1), doctest::Contains("'update'"), swp::HazardError);
  CHECK_THROWS_AS(sched.validate(), swp::HazardError);
}

TEST_CASE("segments that share no state with a delayed one are accepted") {
  swp::LazyScheduler sched;
  Table a, b;
  auto ta = sched.declare_state("a", a);
  auto tb = sched.declare_state("b", b);
  auto w = sched.register_segment("w", [ta](int k) { ta.write()[k] = k; }, {.writes = {ta}});
  auto r = sched.register_segment("r", [tb](int k) { return static_cast<int>(tb.read().count(k)); },
                                  {.reads = {tb}});
  auto step = sched.register_segment("step", [] {});
  sched.register_segment_pre_hook("step", "r");
  auto d = r(3);
  w(3);
  step();
  CHECK(d.get() == 0);
  CHECK(a.at(3) == 3);
  sched.flush();
}

TEST_CASE("touching state a segment did not declare is an error naming the segment and the state") {
  swp::LazyScheduler sched;
  Table table{{1, 10}};
  auto t = sched.declare_state("table", table);
  auto sneaky = sched.register_segment("sneaky", [t] { return t.read().at(1); });
  auto reader = sched.register_segment("reader", [t] { t.write()[2] = 0; }, {.reads = {t}});
  CHECK_THROWS_WITH_AS((void)sneaky(), doctest::Contains("'sneaky'"), swp::HazardError);
  CHECK_THROWS_WITH_AS((void)reader(), doctest::Contains("'table'"), swp::HazardError);
  CHECK(t.read().at(1) == 10);  // plain program code may read it
  t.write()[3] = 30;
  CHECK(table.size() == 2);
}

}  // namespace test_lazy_state
