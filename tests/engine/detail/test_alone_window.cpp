#include "swp/engine/detail/alone_window.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "support/alone_thresholds.hpp"
#include "swp/engine/detail/instance.hpp"

namespace test_alone_window {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::detail::AloneWindow;
using swp::detail::IterationSync;

namespace {

// Iterations retired one at a time through a ring of 4 entries, `helped(i)` saying whether
// another thread finished one of iteration i's sinks; `pause_before` sleeps before retiring
// that iteration (so that the period lasts past AloneWindow::default_period).
struct Retirements {
  std::vector<IterationSync> entries = std::vector<IterationSync>(4);
  std::int64_t first = 0;  // the run's first iteration, held by entry `first_entry`
  std::size_t first_entry = 0;
  std::int64_t next = 0;

  void retire(AloneWindow& window, std::int64_t count,
              const std::function<bool(std::int64_t)>& helped, std::int64_t pause_before = -1) {
    for (const std::int64_t end = next + count; next < end; ++next) {
      const auto entry = (first_entry + static_cast<std::size_t>(next - first)) % entries.size();
      entries[entry].helped.store(helped(next));
      if (next == pause_before) std::this_thread::sleep_for(2 * AloneWindow::default_period);
      window.look(next + 1, entries);
    }
  }
};

// So many tasks per iteration that the period's tasks took far under AloneWindow::task_time
// each, however slowly this machine runs.
constexpr std::size_t countless_tasks = 1'000'000'000'000;

const auto never = [](std::int64_t) { return false; };

}  // namespace

TEST_CASE(
    "a window opens after a period of short iterations without help, for 32 times its "
    "retirements") {
  AloneWindow window;
  window.reset(0, 0, countless_tasks);
  Retirements retirements;
  const std::int64_t look = AloneWindow::look_every;
  retirements.retire(window, look - 1, never);
  CHECK_FALSE(window.open());  // decided every look_every retirements
  retirements.retire(window, 1, never, look - 1);
  REQUIRE(window.open());
  const std::int64_t admissions = AloneWindow::window * look;
  CHECK(window.take(admissions - 1));
  CHECK(window.open());
  CHECK_FALSE(window.take(1));
  CHECK_FALSE(window.open());
}

TEST_CASE("help for more than one retired iteration in 16 keeps the window shut") {
  const std::int64_t look = AloneWindow::look_every;
  for (const std::int64_t helped : {0, 1, 2, 3, 8}) {
    CAPTURE(helped);
    AloneWindow window;
    window.reset(0, 0, countless_tasks);
    Retirements retirements;
    retirements.retire(
        window, look, [&](std::int64_t i) { return i < helped; }, look - 1);
    CHECK(window.open() == (AloneWindow::share * helped <= look));
  }
}

TEST_CASE("tasks as long as a move to another thread keep the window shut") {
  // One task per iteration: the period (over a millisecond) took far more than 250 ns a task.
  AloneWindow window;
  window.reset(0, 0, 1);
  Retirements retirements;
  retirements.retire(window, AloneWindow::look_every, never, AloneWindow::look_every - 1);
  CHECK_FALSE(window.open());
}

TEST_CASE("help for an iteration retired in the window closes it, and so does close()") {
  for (const bool by_help : {true, false}) {
    CAPTURE(by_help);
    AloneWindow window;
    window.reset(100, 2, countless_tasks);  // a run from iteration 100, in entry 2
    Retirements retirements{.first = 100, .first_entry = 2, .next = 100};
    const std::int64_t look = AloneWindow::look_every;
    retirements.retire(window, look, never, 100 + look - 1);
    REQUIRE(window.open());
    retirements.retire(window, 5, never);
    CHECK(window.open());  // the window's own iterations say nothing
    if (by_help) {
      retirements.retire(window, 1, [](std::int64_t) { return true; });
    } else {
      window.close();
    }
    CHECK_FALSE(window.open());
    CHECK_FALSE(window.take(0));
  }
}

TEST_CASE("skip passes over the window's iterations unlooked; the looks after it go on from the right entry") {
  // The clock's window periods retire and admit in one loop, reusing entries before any look:
  // skip() moves on without reading them, and left() bounds that loop's admissions.
  AloneWindow window;
  window.reset(100, 2, countless_tasks);  // a run from iteration 100, in entry 2 of 4
  Retirements retirements{.first = 100, .first_entry = 2, .next = 100};
  const std::int64_t look = AloneWindow::look_every;
  retirements.retire(window, look, never, 100 + look - 1);
  REQUIRE(window.open());
  CHECK(window.left() == AloneWindow::window * look);
  CHECK(window.take(10));
  CHECK(window.left() == AloneWindow::window * look - 10);
  // Seven iterations retire unlooked while later ones take their entries, every one of which
  // now says "helped": skip reads none of them.
  for (IterationSync& entry : retirements.entries) entry.helped.store(true);
  retirements.next += 7;
  window.skip(retirements.next, retirements.entries.size());
  CHECK(window.open());
  // The next look reads the next iteration's entry only (cleared by retire): still open...
  retirements.retire(window, 1, never);
  CHECK(window.open());
  // ...and help for the one after it closes the window.
  retirements.retire(window, 1, [](std::int64_t) { return true; });
  CHECK_FALSE(window.open());
  CHECK(window.left() == 0);
}

TEST_CASE("a period that had too much help decides nothing; the next period decides after its own 32 retirements") {
  // Thresholds that make every look point a verdict (no minimal period, short tasks).
  const swp::test::ScopedAloneThresholds thresholds;
  const std::int64_t look = AloneWindow::look_every;
  AloneWindow window;
  window.reset(0, 0, 1000);
  Retirements retirements;
  // Three helped iterations in 32: 16 * 3 > 32, so the first verdict keeps the window shut.
  retirements.retire(window, look, [](std::int64_t i) { return i < 3; });
  CHECK_FALSE(window.open());
  // The second period counts from zero: no verdict before its 32nd retirement.
  retirements.retire(window, look - 1, never);
  CHECK_FALSE(window.open());
  retirements.retire(window, 1, never);
  CHECK(window.open());
  CHECK(window.left() == AloneWindow::window * look);
}

TEST_CASE("iterations looked at several at a time give the verdicts of one at a time") {
  // The driver retires a few iterations between two looks (the policies look once per
  // admission): a batch may cross a look point, open a window there, and end in that window.
  const swp::test::ScopedAloneThresholds thresholds;
  constexpr std::size_t ring = 16;  // no batch reuses an entry before its look
  for (const unsigned seed : {1U, 2U, 3U, 4U, 5U, 6U, 7U, 8U}) {
    CAPTURE(seed);
    std::mt19937 random(seed);
    std::vector<IterationSync> one_entries(ring);
    std::vector<IterationSync> batch_entries(ring);
    AloneWindow one_at_a_time;
    AloneWindow batched;
    one_at_a_time.reset(0, 0, 1000);
    batched.reset(0, 0, 1000);
    std::int64_t next = 0;
    for (int batch = 0; batch < 400; ++batch) {
      const auto count = static_cast<std::int64_t>(random() % 9 + 1);
      for (std::int64_t k = 0; k < count; ++k) {
        // Help is rare (about one in 24), so windows open and close again by help.
        const bool helped = random() % 24 == 0;
        const std::size_t e = static_cast<std::size_t>(next + k) % ring;
        one_entries[e].helped.store(helped);
        batch_entries[e].helped.store(helped);
        one_at_a_time.look(next + k + 1, one_entries);
      }
      next += count;
      batched.look(next, batch_entries);
      REQUIRE(batched.open() == one_at_a_time.open());
      REQUIRE(batched.left() == one_at_a_time.left());
    }
  }
}

TEST_CASE("a window that opens inside a batch closes at help for a later iteration of that batch") {
  const swp::test::ScopedAloneThresholds thresholds;
  const std::int64_t look = AloneWindow::look_every;
  std::vector<IterationSync> entries(64);
  AloneWindow window;
  window.reset(0, 0, 1000);
  window.look(look - 2, entries);  // no verdict yet
  CHECK_FALSE(window.open());
  // The batch ends three iterations past the look point; the last one was helped.
  entries[static_cast<std::size_t>(look + 2)].helped.store(true);
  window.look(look + 3, entries);
  CHECK_FALSE(window.open());
  // The same batch without that help leaves the window open.
  AloneWindow unhelped;
  unhelped.reset(0, 0, 1000);
  entries[static_cast<std::size_t>(look + 2)].helped.store(false);
  unhelped.look(look - 2, entries);
  unhelped.look(look + 3, entries);
  CHECK(unhelped.open());
}

TEST_CASE("a new run forgets the last one's window") {
  AloneWindow window;
  window.reset(0, 0, countless_tasks);
  Retirements retirements;
  retirements.retire(window, AloneWindow::look_every, never, AloneWindow::look_every - 1);
  REQUIRE(window.open());
  window.reset(retirements.next, 0, countless_tasks);
  CHECK_FALSE(window.open());
}

TEST_CASE("the thresholds are process-wide, and a test may change them") {
  // No minimal period: the rule decides at the first look; a task time of a millisecond: these
  // "tasks" (1,000 per iteration) are short unless the 32 retirements took over 32 s.
  const swp::test::ScopedAloneThresholds thresholds;
  CHECK(AloneWindow::thresholds().period == 0ns);
  CHECK(AloneWindow::thresholds().task_time == 1ms);
  AloneWindow window;
  window.reset(0, 0, 1000);
  Retirements retirements;
  retirements.retire(window, AloneWindow::look_every - 1, never);
  CHECK_FALSE(window.open());
  retirements.retire(window, 1, never);
  CHECK(window.open());
}

TEST_CASE("the thresholds are the defaults unless set") {
  const AloneWindow::Thresholds defaults = AloneWindow::thresholds();
  CHECK(defaults.period == AloneWindow::default_period);
  CHECK(defaults.task_time == AloneWindow::default_task_time);
  {
    const swp::test::ScopedAloneThresholds thresholds({.period = 5ms, .task_time = 7ns});
    CHECK(AloneWindow::thresholds().period == 5ms);
    CHECK(AloneWindow::thresholds().task_time == 7ns);
  }
  CHECK(AloneWindow::thresholds().period == AloneWindow::default_period);
  CHECK(AloneWindow::thresholds().task_time == AloneWindow::default_task_time);
}

}  // namespace test_alone_window
