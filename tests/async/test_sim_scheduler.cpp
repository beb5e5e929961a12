#include "swp/async/sim_scheduler.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "swp/async/detail/run_queue_hooks.hpp"

namespace test_sim_scheduler {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

using Log = std::vector<std::pair<int, swp::Clock::duration>>;

struct Stamp final : swp::Runnable {
  Stamp(swp::SimScheduler& s, Log& l, int i) : sim(&s), log(&l), id(i) {}
  swp::SimScheduler* sim;
  Log* log;
  int id;
  void run() noexcept override { log->emplace_back(id, sim->elapsed()); }
};

}  // namespace

TEST_CASE("virtual time advances to timers only when nothing is runnable") {
  swp::SimScheduler sim;
  Log log;
  std::vector<Stamp> s;
  s.reserve(4);
  for (int i = 0; i < 4; ++i) s.emplace_back(sim, log, i);
  sim.post_at(sim.now() + 300us, s[0]);
  sim.post_at(sim.now() + 100us, s[1]);
  sim.post(s[2]);
  sim.post_at(sim.now() + 100us, s[3]);  // same time as s[1]: posting order decides
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));  // runs dry: false
  using D = swp::Clock::duration;
  CHECK(log == std::vector<std::pair<int, D>>{{2, D(0)}, {1, D(100us)}, {3, D(100us)}, {0, D(300us)}});
  CHECK(sim.elapsed() == 300us);
}

TEST_CASE("virtual time runs only when driven, has no run-queue hooks, and runs no post in place") {
  swp::SimScheduler sim;
  CHECK(sim.runs_only_when_driven());
  CHECK(sim.run_queue_hooks() == nullptr);
  swp::detail::RunQueueHooks& hooks = swp::detail::run_queue_hooks_of(sim);  // the plain ones
  bool inside = true;
  bool drives = true;
  hooks.drive_section([&] {
    inside = swp::detail::sole_runner_here(sim, hooks);
    drives = hooks.drives_here();
  });
  CHECK_FALSE(hooks.runs_no_work_here());  // (a shared queue of its own kind: none)
  CHECK_FALSE(inside);  // a post there runs at its virtual time, not now
  CHECK_FALSE(drives);
}

TEST_CASE("drive_until stops virtual time at its deadline") {
  swp::SimScheduler sim;
  Log log;
  Stamp late(sim, log, 1);
  sim.post_at(sim.now() + 5s, late);
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK(sim.elapsed() == 1s);
  CHECK(log.empty());
  CHECK_FALSE(sim.drive_until([&] { return !log.empty() && false; }, sim.now() + 10s));
  CHECK(log.size() == 1);
  CHECK(sim.elapsed() == 5s);
}

TEST_CASE("cancel_at disarms a runnable's pending timers and keeps the others in order") {
  swp::SimScheduler sim;
  Log log;
  std::vector<Stamp> s;
  s.reserve(3);
  for (int i = 0; i < 3; ++i) s.emplace_back(sim, log, i);
  sim.post_at(sim.now() + 300us, s[0]);
  sim.post_at(sim.now() + 100us, s[1]);
  sim.post_at(sim.now() + 200us, s[2]);
  sim.post_at(sim.now() + 400us, s[1]);
  CHECK(sim.cancel_at(s[1]));   // both of its timers
  CHECK_FALSE(sim.cancel_at(s[1]));
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  using D = swp::Clock::duration;
  CHECK(log == std::vector<std::pair<int, D>>{{2, D(200us)}, {0, D(300us)}});
}

}  // namespace test_sim_scheduler
