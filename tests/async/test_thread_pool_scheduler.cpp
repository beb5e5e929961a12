#include "swp/async/thread_pool_scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/eventually.hpp"
#include "support/runnables.hpp"

namespace test_thread_pool_scheduler {  // each test file's names apart (unity builds)

using swp::test::CountingRunnable;
using swp::test::eventually;
using swp::test::LoggingRunnable;
using swp::test::logging;

namespace {

using namespace std::chrono_literals;

// Posts `follower`, then blocks (yielding, with a deadline) until the follower ran: only
// another thread can run it meanwhile.
struct Blocker final : swp::Runnable {
  swp::Scheduler* scheduler = nullptr;
  CountingRunnable* follower = nullptr;
  std::chrono::milliseconds delay{0};  // before posting: lets the other threads go idle
  std::atomic<std::thread::id> ran_on{};
  std::atomic<bool> finished{false};
  std::atomic<bool> waited_in_vain{false};
  void run() noexcept override {
    ran_on.store(std::this_thread::get_id());
    std::this_thread::sleep_for(delay);
    scheduler->post(*follower);
    waited_in_vain.store(!eventually([&] { return follower->runs.load() > 0; }));
    finished.store(true);
  }
};

// Runs until `release` is set (with a deadline): keeps one worker busy.
struct Occupier final : swp::Runnable {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  void run() noexcept override {
    started.store(true);
    eventually([&] { return release.load(); }, 90s);
    finished.store(true);
  }
};

// Re-posts itself on every run until `stop` is set, or gives up after 30 s (so a test whose
// scheduler never lets go of it fails instead of hanging).
struct Spinner final : swp::Runnable {
  swp::Scheduler* scheduler = nullptr;
  swp::Runnable* partner = nullptr;  // posted instead of itself when set (a ping-pong pair)
  std::atomic<bool>* stop = nullptr;
  swp::Clock::time_point give_up_at = swp::Clock::now() + 30s;
  std::atomic<int> runs{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> gave_up{false};
  void run() noexcept override {
    runs.fetch_add(1);
    if (swp::Clock::now() >= give_up_at) gave_up.store(true);
    if (stop->load() || gave_up.load()) {
      stopped.store(true);
      return;
    }
    scheduler->post(partner != nullptr ? *partner : *this);
  }
};

}  // namespace

TEST_CASE("every posted runnable runs exactly once") {
  swp::ThreadPoolScheduler pool(2);
  std::atomic<int> count{0};
  std::vector<CountingRunnable> work(1000);
  for (auto& w : work) {
    w.count = &count;
    pool.post(w);
  }
  REQUIRE(pool.drive_until([&] { return count.load() == 1000; }, swp::Clock::now() + 30s));
  int wrong = 0;
  for (auto& w : work) wrong += w.runs.load() != 1 ? 1 : 0;
  CHECK(wrong == 0);
}

TEST_CASE("a runnable posted by a running one runs next, on the same thread, before older work") {
  swp::ThreadPoolScheduler pool(0);  // one thread: the order is deterministic
  std::vector<int> log;
  LoggingRunnable a, b, c;
  for (auto* r : {&a, &b, &c}) {
    r->scheduler = &pool;
    r->log = &log;
  }
  a.id = 1;
  b.id = 2;
  c.id = 3;
  a.follow = &c;
  pool.post(a);
  pool.post(b);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 3, 2});
}

TEST_CASE("post_next from a running runnable runs right after it, before its slot and older work") {
  swp::ThreadPoolScheduler pool(0);  // one thread: the order is deterministic
  std::vector<int> log;
  auto r = logging(pool, log, 4);
  r[0]->follow = r[1].get();             // to the slot
  r[0]->follow_next = {r[2].get()};      // the bypass
  pool.post(*r[0]);
  pool.post(*r[3]);  // older work than what r[0] posts
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 3, 2, 4});
}

TEST_CASE("a second post_next from one runnable is posted like post") {
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  auto r = logging(pool, log, 4);
  r[0]->follow_next = {r[1].get(), r[2].get()};  // r[1] bypasses; r[2] takes the slot
  pool.post(*r[0]);
  pool.post(*r[3]);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("post_next outside a runnable posts") {
  // From the test thread (no runnable running): nothing may be left in a bypass nobody runs.
  swp::ThreadPoolScheduler pool(1);
  std::atomic<int> count{0};
  CountingRunnable w;
  w.count = &count;
  pool.post_next(w);
  REQUIRE(pool.drive_until([&] { return count.load() == 1; }, swp::Clock::now() + 30s));
  CHECK(w.runs.load() == 1);
}

TEST_CASE("a runnable that re-posts itself queues behind the work it posted") {
  // A lane's step posts the lanes it woke, then the lane itself when it has more steps: the
  // woken ones go first, the lane waits its turn (it does not take the "next" slot).
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  LoggingRunnable woken;
  woken.scheduler = &pool;
  woken.log = &log;
  woken.id = 2;
  struct Stepper final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    std::vector<int>* log = nullptr;
    swp::Runnable* woken = nullptr;
    int steps = 0;
    void run() noexcept override {
      log->push_back(1);
      if (++steps > 1) return;
      scheduler->post(*woken);
      scheduler->post(*this);
    }
  } stepper;
  stepper.scheduler = &pool;
  stepper.log = &log;
  stepper.woken = &woken;
  pool.post(stepper);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 2, 1});
}

TEST_CASE("with no workers, the thread in drive_until runs the work") {
  swp::ThreadPoolScheduler pool(0);
  std::atomic<int> count{0};
  CountingRunnable w;
  w.count = &count;
  pool.post(w);
  CHECK(pool.drive_until([&] { return count.load() == 1; }, swp::Clock::now() + 30s));
  CHECK(w.ran_on.load() == std::this_thread::get_id());
}

TEST_CASE("drive_until with time_point::min runs what is runnable and does not wait") {
  swp::ThreadPoolScheduler pool(0);
  std::vector<CountingRunnable> work(3);
  for (auto& w : work) pool.post(w);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  for (auto& w : work) CHECK(w.runs.load() == 1);
  CHECK(pool.drive_until([] { return true; }, swp::Clock::time_point::min()));
}

TEST_CASE("drive_until returns false at its deadline when the condition never holds") {
  unsigned workers = 0;
  SUBCASE("no workers") {}
  SUBCASE("one worker") { workers = 1; }
  swp::ThreadPoolScheduler pool(workers);
  const auto start = swp::Clock::now();
  CHECK_FALSE(pool.drive_until([] { return false; }, start + 20ms));
  CHECK(swp::Clock::now() - start >= 20ms);
  CHECK_FALSE(pool.drive_until([] { return false; }, start));  // already past
}

TEST_CASE("a thread in drive_until keeps its deadline while work never stops coming") {
  swp::ThreadPoolScheduler pool(0);
  std::atomic<bool> stop{false};
  Spinner spinner;
  spinner.scheduler = &pool;
  spinner.stop = &stop;
  pool.post(spinner);
  const auto start = swp::Clock::now();
  CHECK_FALSE(pool.drive_until([] { return false; }, start + 20ms));
  CHECK(spinner.runs.load() > 0);
  CHECK_FALSE(spinner.gave_up.load());  // it returned while the work still kept coming
  stop.store(true);
  CHECK(pool.drive_until([&] { return spinner.stopped.load(); }, swp::Clock::now() + 30s));
}

TEST_CASE("notify wakes a thread waiting in drive_until") {
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(10ms);
    flag.store(true);
    pool.notify();
  });
  const auto deadline = swp::Clock::now() + 30s;
  CHECK(pool.drive_until([&] { return flag.load(); }, deadline));
  CHECK(swp::Clock::now() < deadline);  // woken, not merely timed out with the flag set
  setter.join();
}

TEST_CASE("work posted from inside a runnable is taken by another thread while that one blocks") {
  // The follower lands in the blocker's "next" slot; only a thread that steals it there can
  // run it, and the blocker waits for exactly that.
  unsigned workers = 1;
  auto spin = std::chrono::microseconds(20);
  bool caller_drives = true;
  std::chrono::milliseconds delay{0};
  SUBCASE("one worker and the caller, which drives") {}
  SUBCASE("one worker and the caller, both parking at once") { spin = std::chrono::microseconds(0); }
  SUBCASE("two workers, the other one parked by then; the caller does not drive") {
    workers = 2;
    caller_drives = false;
    delay = 20ms;
  }
  SUBCASE("the caller, which drives, parked when the worker posts") { delay = 20ms; }
  swp::ThreadPoolScheduler pool(workers, spin);
  CountingRunnable follower;
  Blocker blocker;
  blocker.scheduler = &pool;
  blocker.follower = &follower;
  blocker.delay = delay;
  pool.post(blocker);
  const auto finished = [&] { return blocker.finished.load(); };
  if (caller_drives) {
    REQUIRE(pool.drive_until(finished, swp::Clock::now() + 60s));
  } else {
    REQUIRE(eventually(finished, 60s));
  }
  CHECK_FALSE(blocker.waited_in_vain.load());
  CHECK(follower.runs.load() == 1);
  CHECK(follower.ran_on.load() != blocker.ran_on.load());
}

TEST_CASE("work a driver leaves in its queue runs, also when that thread does not drive again") {
  // The caller runs a runnable (the only worker is busy) that re-posts itself, like a lane
  // with more steps, and makes the caller's condition true at once: the caller runs a chain of
  // max_chain steps, and the next step is left in its queue when drive_until returns. The
  // caller does not drive again; once free, the worker must take it over.
  constexpr int steps_in_all = static_cast<int>(swp::ThreadPoolScheduler::max_chain) + 1;
  swp::ThreadPoolScheduler pool(1);
  Occupier occupier;
  pool.post(occupier);
  REQUIRE(eventually([&] { return occupier.started.load(); }));
  struct Steps final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    std::atomic<int> steps{0};
    std::atomic<std::thread::id> last_on{};
    void run() noexcept override {
      const int step = steps.load() + 1;
      if (step < steps_in_all) {
        scheduler->post(*this);
      } else {
        last_on.store(std::this_thread::get_id());
      }
      steps.store(step);
    }
  } lane;
  lane.scheduler = &pool;
  pool.post(lane);
  REQUIRE(pool.drive_until([&] { return lane.steps.load() >= 1; }, swp::Clock::now() + 30s));
  CHECK(lane.steps.load() == steps_in_all - 1);
  occupier.release.store(true);
  CHECK(eventually([&] { return lane.steps.load() == steps_in_all; }));
  CHECK(lane.last_on.load() != std::this_thread::get_id());
}

TEST_CASE("a driver runs what its queue holds as one chain, then looks at its condition") {
  // No workers: everything runs on the caller, in order. The condition holds after the first
  // runnable, but the caller looks at it only when a chain ends: after max_chain runnables.
  constexpr auto chain = static_cast<int>(swp::ThreadPoolScheduler::max_chain);
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  auto rs = logging(pool, log, chain + 8);
  pool.drive_section([&] {
    for (auto& r : rs) pool.post(*r);
    CHECK(pool.drive_until([&] { return !log.empty(); }, swp::Clock::now() + 30s));
    CHECK(log.size() == static_cast<std::size_t>(chain));
    // The rest runs in the next drive, in order.
    CHECK(pool.drive_until([&] { return log.size() == rs.size(); }, swp::Clock::now() + 30s));
  });
  for (std::size_t i = 0; i < log.size(); ++i) CHECK(log[i] == static_cast<int>(i) + 1);
}

TEST_CASE("a driver notified inside a chain looks at its condition after the current runnable") {
  // No workers: the chain runs on the caller. Its first runnable makes the condition true on
  // another thread, which then notifies (as a completion elsewhere does); the caller looks at
  // the condition after that runnable, not after max_chain of them.
  constexpr auto chain = static_cast<int>(swp::ThreadPoolScheduler::max_chain);
  swp::ThreadPoolScheduler pool(0);
  std::atomic<bool> condition{false};
  std::vector<int> log;
  struct Notifying final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    std::atomic<bool>* condition = nullptr;
    std::vector<int>* log = nullptr;
    void run() noexcept override {
      log->push_back(0);
      std::thread([this] {
        condition->store(true, std::memory_order_release);
        scheduler->notify();
      }).join();
    }
  } notifying;
  notifying.scheduler = &pool;
  notifying.condition = &condition;
  notifying.log = &log;
  auto rs = logging(pool, log, chain);
  pool.drive_section([&] {
    pool.post(notifying);
    for (auto& r : rs) pool.post(*r);
    CHECK(pool.drive_until([&] { return condition.load(std::memory_order_acquire); },
                           swp::Clock::now() + 30s));
    CHECK(log == std::vector<int>{0});
    // The rest runs in the next drive, in order.
    CHECK(pool.drive_until([&] { return log.size() == rs.size() + 1; }, swp::Clock::now() + 30s));
  });
  for (std::size_t i = 0; i < log.size(); ++i) CHECK(log[i] == static_cast<int>(i));
}

TEST_CASE("a thread in drive_until runs posted work while every worker is busy") {
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));
  Occupier occupier;
  pool.post(occupier);
  REQUIRE(eventually([&] { return occupier.started.load(); }));
  CountingRunnable work;
  SUBCASE("posted before the caller drives") {
    pool.post(work);
    CHECK(pool.drive_until([&] { return work.runs.load() == 1; }, swp::Clock::now() + 30s));
  }
  SUBCASE("posted by another thread while the caller is parked in drive_until") {
    std::thread poster([&] {
      std::this_thread::sleep_for(20ms);
      pool.post(work);
    });
    CHECK(pool.drive_until([&] { return work.runs.load() == 1; }, swp::Clock::now() + 30s));
    poster.join();
  }
  CHECK(work.ran_on.load() == std::this_thread::get_id());
  occupier.release.store(true);
  CHECK(eventually([&] { return occupier.finished.load(); }));
}

TEST_CASE("a runnable that keeps re-posting itself does not starve other work") {
  unsigned workers = 0;
  bool ping_pong = false;
  bool posted_from_inside = false;
  SUBCASE("one thread, the other work from outside") {}
  SUBCASE("one thread, the other work posted by the busy runnable") { posted_from_inside = true; }
  SUBCASE("one thread, two runnables handing the slot back and forth") { ping_pong = true; }
  SUBCASE("a worker and the caller") { workers = 1; }
  swp::ThreadPoolScheduler pool(workers);
  std::atomic<bool> stop{false};
  Spinner a, b;
  for (auto* s : {&a, &b}) {
    s->scheduler = &pool;
    s->stop = &stop;
  }
  if (ping_pong) {
    a.partner = &b;
    b.partner = &a;
  }
  pool.post(a);
  REQUIRE(pool.drive_until([&] { return a.runs.load() > 10; }, swp::Clock::now() + 30s));
  CountingRunnable other;
  struct Poster final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    swp::Runnable* what = nullptr;
    void run() noexcept override { scheduler->post(*what); }
  } poster;
  poster.scheduler = &pool;
  poster.what = &other;
  pool.post(posted_from_inside ? static_cast<swp::Runnable&>(poster) : other);
  CHECK(pool.drive_until([&] { return other.runs.load() == 1; }, swp::Clock::now() + 30s));
  CHECK_FALSE(a.gave_up.load());
  stop.store(true);
  CHECK(pool.drive_until([&] { return a.stopped.load() || b.stopped.load(); },
                         swp::Clock::now() + 60s));
}

TEST_CASE("runnables posted from many foreign threads at once each run exactly once") {
  constexpr int producers = 4;
  constexpr int each = 5000;
  swp::ThreadPoolScheduler pool(2);
  std::atomic<int> count{0};
  std::vector<CountingRunnable> work(producers * each);
  for (auto& w : work) w.count = &count;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < each; ++i) pool.post(work[static_cast<std::size_t>(p * each + i)]);
    });
  }
  // The producers' posts must wake threads by themselves: the caller does not drive at first.
  const bool all_ran = eventually([&] { return count.load() == producers * each; }, 60s);
  for (auto& t : threads) t.join();
  REQUIRE(all_ran);
  int wrong = 0;
  for (auto& w : work) wrong += w.runs.load() != 1 ? 1 : 0;
  CHECK(wrong == 0);
}

TEST_CASE("more work posted from a runnable than its queue holds still runs, each once") {
  unsigned workers = 0;
  SUBCASE("no workers") {}
  SUBCASE("one worker") { workers = 1; }
  swp::ThreadPoolScheduler pool(workers);
  std::atomic<int> count{0};
  std::vector<CountingRunnable> work(1000);
  for (auto& w : work) w.count = &count;
  struct Fan final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    std::vector<CountingRunnable>* work = nullptr;
    void run() noexcept override {
      for (auto& w : *work) scheduler->post(w);
    }
  } fan;
  fan.scheduler = &pool;
  fan.work = &work;
  pool.post(fan);
  REQUIRE(pool.drive_until([&] { return count.load() == 1000; }, swp::Clock::now() + 30s));
  int wrong = 0;
  for (auto& w : work) wrong += w.runs.load() != 1 ? 1 : 0;
  CHECK(wrong == 0);
}

TEST_CASE("a runnable may wait in drive_until for work it posted") {
  unsigned workers = 0;
  SUBCASE("no workers") {}
  SUBCASE("one worker") { workers = 1; }
  swp::ThreadPoolScheduler pool(workers);
  struct Nested final : swp::Runnable {
    swp::ThreadPoolScheduler* scheduler = nullptr;
    CountingRunnable inner;
    std::atomic<bool> ok{false};
    std::atomic<bool> finished{false};
    void run() noexcept override {
      scheduler->post(inner);
      ok.store(scheduler->drive_until([&] { return inner.runs.load() == 1; },
                                      swp::Clock::now() + 30s));
      finished.store(true);
    }
  } nested;
  nested.scheduler = &pool;
  pool.post(nested);
  REQUIRE(pool.drive_until([&] { return nested.finished.load(); }, swp::Clock::now() + 60s));
  CHECK(nested.ok.load());
}

TEST_CASE("more threads than max_drivers can drive at once, each helped to its result") {
  constexpr unsigned drivers = swp::ThreadPoolScheduler::max_drivers + 4;
  swp::ThreadPoolScheduler pool(1);
  struct Chain final : swp::Runnable {
    swp::Scheduler* scheduler = nullptr;
    CountingRunnable tail;
    void run() noexcept override { scheduler->post(tail); }
  };
  std::vector<std::unique_ptr<Chain>> chains;
  for (unsigned i = 0; i < drivers; ++i) {
    chains.push_back(std::make_unique<Chain>());
    chains.back()->scheduler = &pool;
  }
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < drivers; ++i) {
    threads.emplace_back([&, i] {
      Chain& chain = *chains[i];
      for (int round = 0; round < 100; ++round) {
        chain.tail.runs.store(0);
        pool.post(chain);
        if (!pool.drive_until([&] { return chain.tail.runs.load() == 1; },
                              swp::Clock::now() + 30s))
          return;
      }
      ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok.load() == static_cast<int>(drivers));
}

TEST_CASE("posts from a drive_section outside any runnable run in their order on the calling thread") {
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  auto rs = logging(pool, log, 3);
  bool ran = false;
  pool.drive_section([&] {
    for (auto& r : rs) pool.post(*r);
    // Not in the slot (which would run the newest first): nothing posted here continues
    // a runnable.
    ran = pool.drive_until([&] { return log.size() == 3; }, swp::Clock::now() + 30s);
  });
  CHECK(ran);
  CHECK(log == std::vector<int>{1, 2, 3});
}

// Says what its thread is to the pool when it runs: its sole runner, a driver, free of work.
// (detail::sole_runner_here, asked of a pool, which is its own run-queue hooks.)
bool sole_runner_here(const swp::ThreadPoolScheduler& pool) {
  return swp::detail::sole_runner_here(pool, pool);
}

struct WhereProbe final : swp::Runnable {
  swp::ThreadPoolScheduler* scheduler = nullptr;
  std::atomic<int> runs{0};
  std::atomic<bool> sole{true};
  std::atomic<bool> drives{true};
  std::atomic<bool> no_work{true};
  void run() noexcept override {
    sole.store(sole_runner_here(*scheduler));
    drives.store(scheduler->drives_here());
    no_work.store(scheduler->runs_no_work_here());
    runs.fetch_add(1);
  }
};

TEST_CASE("sole_runner_here: a thread outside any runnable of a pool without workers") {
  SUBCASE("no workers: driving it or running no work, not inside a runnable") {
    swp::ThreadPoolScheduler pool(0);
    CHECK(sole_runner_here(pool));  // running no work: what it posts waits for a driver
    WhereProbe probe;
    probe.scheduler = &pool;
    bool inside = false;
    bool nested = false;
    pool.drive_section([&] {
      inside = sole_runner_here(pool);
      pool.post(probe);
      nested = pool.drive_until([&] { return probe.runs.load() == 1; }, swp::Clock::now() + 30s);
    });
    CHECK(inside);
    CHECK(nested);
    CHECK_FALSE(probe.sole.load());  // a runnable may not run work in place of its post
    CHECK(sole_runner_here(pool));
  }
  SUBCASE("a driver of another pool is not this one's runner") {
    swp::ThreadPoolScheduler pool(0);
    swp::ThreadPoolScheduler other(0);
    bool here = true;
    other.drive_section([&] { here = sole_runner_here(pool); });
    CHECK_FALSE(here);
  }
  SUBCASE("with a worker, never: posted work may run there") {
    swp::ThreadPoolScheduler pool(1);
    bool inside = true;
    bool drives = false;
    pool.drive_section([&] {
      inside = sole_runner_here(pool);
      drives = pool.drives_here();
    });
    CHECK_FALSE(inside);
    CHECK(drives);  // it drives the pool, but shares it with the worker
  }
}

// Where a thread stands to a pool, as drives_here and runs_no_work_here say it.
struct Standing {
  bool drives = false;
  bool no_work = false;
  bool operator==(const Standing&) const = default;
};
Standing standing(const swp::ThreadPoolScheduler& pool) {
  return {pool.drives_here(), pool.runs_no_work_here()};
}

TEST_CASE("drives_here and runs_no_work_here: driving the pool, inside a runnable, or neither") {
  for (const unsigned workers : {0U, 1U}) {
    CAPTURE(workers);
    swp::ThreadPoolScheduler pool(workers);
    swp::ThreadPoolScheduler other(0);
    const Standing before = standing(pool);
    WhereProbe probe;
    probe.scheduler = &pool;
    Standing driving;
    Standing driving_other{true, true};
    bool ran = false;
    pool.drive_section([&] {
      driving = standing(pool);
      pool.post(probe);
      ran = pool.drive_until([&] { return probe.runs.load() == 1; }, swp::Clock::now() + 30s);
    });
    other.drive_section([&] { driving_other = standing(pool); });
    CHECK(ran);
    CHECK(before == Standing{false, true});  // no work at all
    CHECK(driving == Standing{true, false});
    // Inside a runnable (on whichever thread ran it): neither.
    CHECK_FALSE(probe.drives.load());
    CHECK_FALSE(probe.no_work.load());
    CHECK(driving_other == Standing{false, false});  // another pool's driver
    CHECK(standing(pool) == Standing{false, true});   // the section ended
  }
}

TEST_CASE("runs_only_when_driven: a pool without workers") {
  CHECK(swp::ThreadPoolScheduler(0).runs_only_when_driven());
  CHECK_FALSE(swp::ThreadPoolScheduler(1).runs_only_when_driven());
}

TEST_CASE("drive_section propagates what its section throws and leaves the scheduler usable") {
  swp::ThreadPoolScheduler pool(0);
  CountingRunnable r;
  CHECK_THROWS_AS(pool.drive_section([&] {
    pool.post(r);
    throw std::runtime_error("section failed");
  }),
                  std::runtime_error);
  // What the section posted is still in the queue it left: the next drive runs it.
  CHECK(pool.drive_until([&] { return r.runs.load() == 1; }, swp::Clock::now() + 30s));
}

TEST_CASE("work a drive_section posted and left behind runs on a worker") {
  swp::ThreadPoolScheduler pool(1);
  CountingRunnable r;
  pool.drive_section([&] { pool.post(r); });
  CHECK(eventually([&] { return r.runs.load() == 1; }));
  CHECK(r.ran_on.load() != std::this_thread::get_id());
}

TEST_CASE("posts in a PostBatch keep their order and each runs once") {
  swp::ThreadPoolScheduler pool(0);
  std::vector<int> log;
  auto rs = logging(pool, log, 4);
  struct Batcher final : swp::Runnable {
    swp::ThreadPoolScheduler* scheduler = nullptr;
    std::vector<int>* log = nullptr;
    std::vector<swp::Runnable*> posts;
    void run() noexcept override {
      log->push_back(0);
      const swp::detail::RunQueueHooks::PostBatch outer(*scheduler);
      const swp::detail::RunQueueHooks::PostBatch inner(*scheduler);  // batches nest
      for (swp::Runnable* r : posts) scheduler->post(*r);
    }
  } batcher;
  batcher.scheduler = &pool;
  batcher.log = &log;
  for (auto& r : rs) batcher.posts.push_back(r.get());
  pool.post(batcher);
  CHECK(pool.drive_until([&] { return log.size() == 5; }, swp::Clock::now() + 30s));
  // Outside a batch the newest post would run first (the slot); a batch keeps the order.
  CHECK(log == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("a PostBatch announces its posts to idle workers when it ends") {
  // The driver posts in a batch and leaves without driving: only the announcement at the
  // batch's end can make the parked worker look.
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));
  std::this_thread::sleep_for(20ms);  // the worker parks
  CountingRunnable a;
  CountingRunnable b;
  pool.drive_section([&] {
    const swp::detail::RunQueueHooks::PostBatch batch(pool);
    pool.post(a);
    pool.post(b);
  });
  CHECK(eventually([&] { return a.runs.load() == 1 && b.runs.load() == 1; }));
}

TEST_CASE("join_workers stops and joins the workers; what is posted later waits for a driver") {
  swp::ThreadPoolScheduler pool(2);
  CountingRunnable before;
  pool.post(before);
  REQUIRE(eventually([&] { return before.runs.load() == 1; }));
  pool.join_workers();
  pool.join_workers();  // idempotent (and the destructor joins again)
  // No worker is left to run it: only a thread that drives the pool does.
  CountingRunnable after;
  pool.post(after);
  CHECK(after.runs.load() == 0);
  CHECK(pool.drive_until([&] { return after.runs.load() == 1; },
                         std::chrono::steady_clock::now() + 60s));
  CHECK(after.ran_on.load() == std::this_thread::get_id());
}

}  // namespace test_thread_pool_scheduler
