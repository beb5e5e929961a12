#include "swp/async/scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_scheduler {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Counter final : swp::Runnable {
  std::atomic<int> runs{0};
  void run() noexcept override { runs.fetch_add(1); }
};

}  // namespace

TEST_CASE("park_unless parks until the next notify, once, unless the condition holds") {
  swp::SimScheduler sim;
  Counter r;
  CHECK_FALSE(sim.park_unless(r, [] { return true; }));  // ready: not parked
  sim.notify();
  sim.drive_until([] { return false; }, swp::Clock::time_point::min());
  CHECK(r.runs == 0);

  CHECK(sim.park_unless(r, [] { return false; }));
  sim.drive_until([] { return false; }, swp::Clock::time_point::min());
  CHECK(r.runs == 0);  // parked, not posted
  sim.notify();
  sim.notify();  // a second notify finds nothing parked
  sim.drive_until([&] { return r.runs > 1; }, swp::Clock::time_point::min());
  CHECK(r.runs == 1);
}

TEST_CASE("park_unless and notify race without lost wake-ups") {
  // A waiter that parks until a flag is set, against a setter on another thread that sets it
  // and notifies: whatever the interleaving, the waiter ends up running.
  swp::ThreadPoolScheduler pool(1);
  for (int round = 0; round < 2000; ++round) {
    std::atomic<bool> flag{false};
    struct Waiter final : swp::Runnable {
      swp::Scheduler* scheduler = nullptr;
      std::atomic<bool>* flag = nullptr;
      std::atomic<bool> woke{false};
      void run() noexcept override {
        if (!scheduler->park_unless(*this, [this] { return flag->load(); })) woke.store(true);
      }
    } waiter;
    waiter.scheduler = &pool;
    waiter.flag = &flag;
    std::thread setter([&] {
      flag.store(true, std::memory_order_seq_cst);
      pool.notify();
    });
    waiter.run();
    setter.join();
    REQUIRE(pool.drive_until([&] { return waiter.woke.load(); }, swp::Clock::now() + 10s));
  }
}

TEST_CASE("notify wakes every thread parked in drive_until") {
  swp::ThreadPoolScheduler pool(1, std::chrono::microseconds(0));  // drivers park at once
  std::atomic<bool> flag{false};
  std::atomic<int> woke{0};
  std::vector<std::thread> drivers;
  for (int i = 0; i < 3; ++i) {
    drivers.emplace_back([&] {
      const auto deadline = swp::Clock::now() + 30s;
      // Woken by notify, not merely timed out with the flag set by then.
      if (pool.drive_until([&] { return flag.load(); }, deadline) && swp::Clock::now() < deadline)
        woke.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(20ms);  // most likely parked by then; either way they must wake
  flag.store(true, std::memory_order_seq_cst);
  pool.notify();
  for (auto& d : drivers) d.join();
  CHECK(woke.load() == 3);
}

namespace {

// A scheduler as a user writes one: only what Scheduler requires (post, drive_until, now,
// wake_drivers), no run-queue hooks. With `threaded`, one thread of its own runs the work and
// drive_until only waits; without, nothing runs the work but drive_until (the scheduler says
// so: runs_only_when_driven). One mutex, one condition variable, one FIFO.
class MinimalScheduler final : public swp::Scheduler {
 public:
  explicit MinimalScheduler(bool threaded) : threaded_(threaded) {
    if (threaded_) worker_ = std::jthread([this](const std::stop_token& stop) { work(stop); });
  }
  ~MinimalScheduler() override {
    if (!threaded_) return;
    worker_.request_stop();
    wake();
  }

  void post(swp::Runnable& r) noexcept override {
    posts.fetch_add(1, std::memory_order_relaxed);
    const std::lock_guard lock(mutex_);
    queue_.push(r);
    ++generation_;
    changed_.notify_all();
  }

  bool drive_until(const std::function<bool()>& done, swp::Clock::time_point deadline) override {
    for (;;) {
      std::uint64_t seen = 0;
      {
        const std::lock_guard lock(mutex_);
        seen = generation_;
      }
      // Read after the generation: a change made true after this look bumps it (notify).
      if (done()) return true;
      if (!threaded_) {
        if (swp::Runnable* r = pop()) {
          r->run();
          continue;
        }
      }
      std::unique_lock lock(mutex_);
      const auto changed = [&] { return generation_ != seen; };
      if (deadline == swp::Clock::time_point::max()) {
        changed_.wait(lock, changed);
      } else if (!changed_.wait_until(lock, deadline, changed)) {
        lock.unlock();
        return done();
      }
    }
  }

  [[nodiscard]] swp::Clock::time_point now() const override { return swp::Clock::now(); }
  [[nodiscard]] bool runs_only_when_driven() const noexcept override { return !threaded_; }

  std::atomic<int> posts{0};

 protected:
  void wake_drivers() noexcept override { wake(); }

 private:
  void wake() noexcept {
    const std::lock_guard lock(mutex_);
    ++generation_;
    changed_.notify_all();
  }
  swp::Runnable* pop() noexcept {
    const std::lock_guard lock(mutex_);
    return queue_.pop();
  }
  void work(const std::stop_token& stop) noexcept {
    for (;;) {
      swp::Runnable* r = nullptr;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop.stop_requested() || !queue_.empty(); });
        if (stop.stop_requested()) return;
        r = queue_.pop();
      }
      r->run();
    }
  }

  const bool threaded_;
  std::mutex mutex_;
  std::condition_variable changed_;
  swp::detail::IntrusiveFifo<swp::Runnable, &swp::Runnable::next_runnable> queue_;
  std::uint64_t generation_ = 0;  // bumped by every post and notify
  std::jthread worker_;
};

struct Fields {
  int square = 0;
  int total = 0;  // running total of the batches (an inter-iteration dependency)
};
using Ctx = swp::IterContext<int, Fields>;

// Load -> Square (stage 1, a lane of its own, reading Load), and Sum (stage 1, its lane),
// which adds the batch to the previous iteration's total.
swp::Plan<Ctx> plan(std::map<std::int64_t, int>& totals) {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx) { return ctx.batch; }, {.stage = 0});
  plan.add(
      "Square",
      [load](Ctx& ctx) -> swp::Co<void> {
        const int v = co_await ctx.get(load);
        ctx.square = v * v;
      },
      {.stage = 1, .thread_group = "compute"}, swp::reads(load));
  auto sum = plan.add("Sum",
                      [&totals](Ctx& ctx) {
                        const int before = ctx.has_previous() ? totals.at(ctx.iter_idx - 1) : 0;
                        ctx.total = before + ctx.batch;
                        totals[ctx.iter_idx] = ctx.total;
                      },
                      {.stage = 1, .thread_group = "sum"});
  plan.inter_iter_deps = {{sum, sum}};
  return plan;
}

struct Seen {
  std::int64_t iter;
  int batch, square, total;
  bool operator==(const Seen&) const = default;
};

}  // namespace

TEST_CASE_TEMPLATE("a user's scheduler with only the base interface runs a pipeline to the end",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // No run-queue hooks: the engines take the plain way everywhere (no bypass queries, batches,
  // run-here scopes, offers or watches), with progress() and with next().
  for (const bool threaded : {true, false}) {
    CAPTURE(threaded);
    auto owned = std::make_unique<MinimalScheduler>(threaded);
    MinimalScheduler& scheduler = *owned;
    REQUIRE(scheduler.run_queue_hooks() == nullptr);
    swp::Runtime rt(std::move(owned), {.backend = swp::Backend::host});
    std::map<std::int64_t, int> totals;
    auto pipe = Engine::template make<Ctx>(rt, plan(totals), 2);
    pipe->set_timeouts({.retire = 30s, .drain = 30s});
    std::vector<Seen> seen;
    pipe->on_retire(
        [&](const Ctx& c) { seen.push_back({c.iter_idx, c.batch, c.square, c.total}); });

    std::vector<Seen> expected;
    std::vector<int> batches;
    int total = 0;
    for (int b = 1; b <= 12; ++b) {
      batches.push_back(b);
      total += b;
      expected.push_back({b - 1, b, b * b, total});
    }
    SUBCASE("retired by progress()") {
      pipe->fill_pipeline(batches);
      std::vector<std::int64_t> retired;
      while (auto iter = pipe->progress()) retired.push_back(iter->iter());
      CHECK(retired.size() == batches.size());
    }
    SUBCASE("retired by co_await next()") {
      pipe->fill_pipeline(batches);
      std::vector<std::int64_t> retired;
      while (auto r = swp::sync_wait(pipe->next())) retired.push_back(r->iter());
      CHECK(retired.size() == batches.size());
    }
    pipe->drain();
    CHECK(seen == expected);
    CHECK(scheduler.posts.load() > 0);  // the lanes ran on it
  }
}

}  // namespace test_scheduler
