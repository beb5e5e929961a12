// Streaming sources (issue: pipelines inside services): awaitable sources and channels that
// have "nothing yet", the push form (submit), iteration numbers that go on across runs, and a
// run that goes on after its source ended without drain(). Both engines.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/cli.hpp"
#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/text.hpp"
#include "swp/async/channel.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_sources {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Fields {
  int square = 0;
  int total = 0;  // running total of the batches (an inter-iteration dependency)
};
using Ctx = swp::IterContext<int, Fields>;

// Load -> Square (stage 1), and Sum (stage 1), which adds the batch to the previous iteration's
// total: stage 1 exists, so the clock engine needs a later period for every iteration (a
// starving source must not hold those periods back).
struct Totals {
  std::mutex mutex;
  std::map<std::int64_t, int> total;
};

swp::Plan<Ctx> plan(Totals& totals) {
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
                        std::lock_guard lock(totals.mutex);
                        const int before =
                            ctx.has_previous() ? totals.total.at(ctx.iter_idx - 1) : 0;
                        ctx.total = before + ctx.batch;
                        totals.total[ctx.iter_idx] = ctx.total;
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

template <class Engine>
struct Rig {
  Totals totals;
  swp::Runtime rt;
  std::unique_ptr<swp::Pipeline<Ctx>> pipe;
  std::vector<Seen> seen;

  explicit Rig(swp::Backend backend = swp::Backend::host, std::size_t depth = 2)
      : rt({.backend = backend, .workers = 2}),
        pipe(Engine::template make<Ctx>(rt, plan(totals), depth)) {
    pipe->set_timeouts({.retire = 30s, .drain = 30s});
    pipe->on_retire([this](const Ctx& c) {
      seen.push_back({c.iter_idx, c.batch, c.square, c.total});
    });
  }

  std::vector<std::int64_t> retire_all() {
    std::vector<std::int64_t> out;
    while (auto i = pipe->progress()) out.push_back(i->iter());
    return out;
  }
};

std::vector<std::int64_t> range(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> r;
  for (std::int64_t i = from; i < to; ++i) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE_TEMPLATE("a channel source with nothing yet keeps the iterations in flight retiring",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  swp::Channel<int> ch(8);
  CHECK(ch.try_send(3));
  rig.pipe->fill_pipeline(ch);
  // One batch, the channel still open: it retires without waiting for more (the clock
  // engine opens its stage-1 period as a bubble).
  CHECK(swp::test::iter_of(rig.pipe->progress()) == 0);
  CHECK(rig.seen == std::vector<Seen>{{0, 3, 9, 3}});
  // Nothing in flight, nothing yet: progress() waits for the next batch.
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    for (int b : {4, 5, 6}) {
      int v = b;
      while (!ch.try_send(v)) std::this_thread::yield();
      std::this_thread::sleep_for(2ms);
    }
    ch.close();
  });
  CHECK(rig.retire_all() == range(1, 4));
  producer.join();
  CHECK(rig.seen == std::vector<Seen>{{0, 3, 9, 3}, {1, 4, 16, 7}, {2, 5, 25, 12}, {3, 6, 36, 18}});
}

TEST_CASE_TEMPLATE("an awaitable source suspends until it has a batch, and may end", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  swp::Channel<int> ch(2);
  int calls = 0;
  rig.pipe->fill_pipeline([&]() -> swp::Co<std::optional<int>> {
    ++calls;
    co_return co_await ch.receive();  // suspends while the channel is empty
  });
  CHECK(calls == 0);  // fill_pipeline calls no source
  std::thread producer([&] {
    for (int b = 1; b <= 6; ++b)
      swp::sync_wait(
          [](swp::Channel<int>& c, int v) -> swp::Co<void> { co_await c.send(v); }(ch, b));
    ch.close();
  });
  CHECK(rig.retire_all() == range(0, 6));
  producer.join();
  REQUIRE(rig.seen.size() == 6);
  int total = 0;
  for (int b = 1; b <= 6; ++b) {
    total += b;
    CHECK(rig.seen[static_cast<std::size_t>(b - 1)] == Seen{b - 1, b, b * b, total});
  }
  CHECK(calls == 7);  // six batches and the end
}

TEST_CASE_TEMPLATE("next() waits for a starving source without holding a thread", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  rig.pipe->fill_submissions(4);
  std::vector<std::int64_t> retired;
  std::thread producer([&] {
    for (int b = 1; b <= 5; ++b) {
      std::this_thread::sleep_for(3ms);
      swp::sync_wait([](swp::Pipeline<Ctx>& p, int v) -> swp::Co<void> { co_await p.submit(v); }(
                                                          *rig.pipe, b));
    }
    rig.pipe->close_submissions();
  });
  swp::sync_wait([](swp::Pipeline<Ctx>& p, std::vector<std::int64_t>& out) -> swp::Co<void> {
    while (auto i = co_await p.next()) out.push_back(i->iter());
  }(*rig.pipe, retired));
  producer.join();
  CHECK(retired == range(0, 5));
  CHECK(rig.seen.back() == Seen{4, 5, 25, 15});
}

TEST_CASE_TEMPLATE("submit applies back-pressure and ends with close_submissions", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  int early = 1;
  CHECK_THROWS_AS(rig.pipe->try_submit(early), swp::PipelineStateError);
  CHECK_THROWS_AS(rig.pipe->fill_submissions(0), std::invalid_argument);
  rig.pipe->fill_submissions(2);
  int a = 1, b = 2, c = 3;
  CHECK(rig.pipe->try_submit(a));
  CHECK(rig.pipe->try_submit(b));
  CHECK_FALSE(rig.pipe->try_submit(c));  // full: nothing admitted until progress() runs
  CHECK(c == 3);
  CHECK(swp::test::iter_of(rig.pipe->progress()) == 0);  // admitted 1 and 2, retired 1: room again
  CHECK(rig.pipe->try_submit(c));
  rig.pipe->close_submissions();
  int late = 4;
  CHECK_FALSE(rig.pipe->try_submit(late));
  CHECK(rig.retire_all() == range(1, 3));
  CHECK(rig.seen.back() == Seen{2, 3, 9, 6});
}

TEST_CASE_TEMPLATE("a run whose source ended goes on with a new fill, no drain needed", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    Rig<Engine> rig(backend);
    rig.pipe->fill_pipeline(std::vector<int>{1, 2, 3});
    CHECK(rig.retire_all() == range(0, 3));
    CHECK_FALSE(rig.pipe->progress());  // still at the end
    // Same run: numbers go on, and Sum's total carries over (inter-iteration dependency).
    rig.pipe->fill_pipeline(std::vector<int>{4, 5});
    CHECK(rig.retire_all() == range(3, 5));
    CHECK(rig.seen.back() == Seen{4, 5, 25, 15});
    CHECK(rig.pipe->next_iteration() == 5);
    // After drain() a new run starts: numbers go on, the first iteration has no previous.
    rig.pipe->drain();
    rig.pipe->fill_pipeline(std::vector<int>{7});
    CHECK(rig.retire_all() == range(5, 6));
    CHECK(rig.seen.back() == Seen{5, 7, 49, 7});
  }
}

TEST_CASE_TEMPLATE("fill_pipeline while iterations are in flight names them", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  rig.pipe->fill_pipeline(std::vector<int>{1, 2, 3, 4});
  CHECK(swp::test::iter_of(rig.pipe->progress()) == 0);
  CHECK_THROWS_WITH_AS(
      rig.pipe->fill_pipeline(std::vector<int>{9}),
      doctest::Contains("fill_pipeline while a run is in progress (iterations 1.."),
      swp::PipelineStateError);
  CHECK(rig.retire_all() == range(1, 4));  // the refused fill changed nothing
}

TEST_CASE_TEMPLATE("cancel() ends a wait for a starving source; the channel loses nothing", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  swp::Channel<int> ch(4);
  rig.pipe->fill_pipeline(ch);
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    rig.pipe->cancel("shutdown");
  });
  CHECK_THROWS_WITH_AS(rig.pipe->progress(), "pipeline cancelled: shutdown", swp::Cancelled);
  canceller.join();
  // The cancelled receive took nothing: the next batch goes to the next run.
  CHECK(ch.try_send(8));
  ch.close();
  rig.pipe->fill_pipeline(ch);
  CHECK(rig.retire_all() == range(0, 1));
  CHECK(rig.seen == std::vector<Seen>{{0, 8, 64, 8}});
}

TEST_CASE_TEMPLATE("drain() ends a run whose source has nothing yet", Engine, swp::test::UseClock,
                   swp::test::UseDataFlow) {
  Rig<Engine> rig;
  swp::Channel<int> ch(4);
  CHECK(ch.try_send(1));
  rig.pipe->fill_pipeline(ch);
  CHECK(swp::test::iter_of(rig.pipe->progress()) == 0);
  rig.pipe->drain();  // returns: the wait for the open, empty channel is cancelled
  CHECK(ch.try_send(2));
  ch.close();
  rig.pipe->fill_pipeline(ch);
  CHECK(rig.retire_all() == range(1, 2));
  CHECK(rig.seen.back() == Seen{1, 2, 4, 2});
}

TEST_CASE_TEMPLATE("on sim, a source nobody can answer is a deadlock, reported", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig(swp::Backend::sim);
  swp::Channel<int> ch(4);
  CHECK(ch.try_send(1));
  rig.pipe->fill_pipeline(ch);
  CHECK(swp::test::iter_of(rig.pipe->progress()) == 0);
  CHECK_THROWS_WITH_AS(rig.pipe->progress(),
                       doctest::Contains("the source has no batch for iteration 1"),
                       swp::PipelineTimeout);
}

TEST_CASE_TEMPLATE("an awaitable source's error fails the run, naming the iteration", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  Rig<Engine> rig;
  int n = 0;
  rig.pipe->fill_pipeline([&]() -> swp::Co<std::optional<int>> {
    if (n == 2) throw std::runtime_error("socket reset");
    co_return n++;
  });
  std::vector<std::int64_t> retired;
  try {
    while (auto i = rig.pipe->progress()) retired.push_back(i->iter());
    FAIL("the source's error did not surface");
  } catch (const swp::CallbackError& e) {
    CHECK(std::string(e.what()) == "the batch source failed in iteration 2: socket reset");
  }
  // What retired before the failure did so in order; iteration 1, in flight beside the failed
  // admission, may have been cancelled instead.
  CHECK(retired.size() <= 2);
  CHECK(retired == range(0, static_cast<std::int64_t>(retired.size())));
}

namespace {

// A pool scheduler whose wake-ups take their time on the thread marked `slow_thread`: there,
// notify() wakes the drivers only after a pause, and then pauses again before it writes a
// member. Whoever destroys the scheduler while such a notify() runs makes the sanitizer
// builds report a use after free (ASan) or a race with the delete (TSan).
thread_local bool slow_thread = false;

class SlowNotifyScheduler final : public swp::Scheduler {
 public:
  void post(swp::Runnable& r) noexcept override { inner_.post(r); }
  void post_next(swp::Runnable& r) noexcept override { inner_.post_next(r); }
  bool drive_until(const std::function<bool()>& done,
                   swp::Clock::time_point deadline) override {
    return inner_.drive_until(done, deadline);
  }
  [[nodiscard]] swp::Clock::time_point now() const override { return inner_.now(); }

 protected:
  void wake_drivers() noexcept override {
    if (slow_thread) std::this_thread::sleep_for(10ms);
    inner_.notify();
    if (slow_thread) {
      std::this_thread::sleep_for(20ms);
      slow_wakes_.fetch_add(1, std::memory_order_relaxed);
    }
  }

 private:
  swp::ThreadPoolScheduler inner_{2};
  std::atomic<int> slow_wakes_{0};
};

}  // namespace

TEST_CASE_TEMPLATE("a fetch completed on a producer's thread is done with the runtime before it goes",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Seen under ThreadSanitizer (the loader's decode threads): a fetch resumes on the thread
  // that sends (or closes), publishes its result and then notifies the scheduler; the driver
  // may see the end of data in between, and the pipeline and its runtime go at once. The
  // pipeline's destruction waits for that notify() to return.
  for (int round = 0; round < 3; ++round) {
    swp::Channel<int> ch(4);
    std::thread producer;
    {
      Totals totals;
      swp::Runtime rt(std::make_unique<SlowNotifyScheduler>(), {.backend = swp::Backend::host});
      auto pipe = Engine::template make<Ctx>(rt, plan(totals), 2);
      pipe->set_timeouts({.retire = 30s, .drain = 30s});
      pipe->fill_pipeline(ch);
      producer = std::thread([&ch, round] {
        slow_thread = true;
        // The pauses let the driver start its fetches first (else it finds the batch queued
        // and the channel closed, and no fetch runs here); they only make the case likely.
        std::this_thread::sleep_for(5ms);
        int v = round;
        while (!ch.try_send(v)) std::this_thread::yield();
        std::this_thread::sleep_for(5ms);
        ch.close();  // resumes the waiting fetch here, with the end of data
      });
      std::vector<std::int64_t> retired;
      while (auto i = pipe->progress()) retired.push_back(i->iter());
      CHECK(retired == range(0, 1));
      CHECK(totals.total.at(0) == round);
    }  // the pipeline, then the runtime, while `producer` may still be inside notify()
    producer.join();
  }
}

namespace {

// An await that ignores swp's cancellation (a foreign library's callback, say): it suspends
// until open() resumes it, on the thread that calls open() — or, so that no bug hangs the
// suite, until a watchdog does after 10 s with the batch -1.
class Gate {
 public:
  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
  }

  struct Awaiter {
    Gate& gate;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept { gate.waiting_.store(h.address()); }
    [[nodiscard]] int await_resume() const noexcept { return gate.value_; }
  };
  Awaiter wait() { return Awaiter{*this}; }

  /// A coroutine is suspended here.
  [[nodiscard]] bool waiting() const { return waiting_.load() != nullptr; }
  /// Resumes the suspended coroutine with `value` on this thread; false when none waits.
  bool open(int value) {
    void* waiting = waiting_.exchange(nullptr);
    if (waiting == nullptr) return false;
    value_ = value;
    std::coroutine_handle<>::from_address(waiting).resume();
    return true;
  }

 private:
  std::atomic<void*> waiting_{nullptr};
  int value_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool closing_ = false;
  std::thread watchdog_{[this] {
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, 10s, [this] { return closing_; })) return;
    lock.unlock();
    open(-1);
  }};
};

// What reached the callbacks: every batch the source gave must be in exactly one of them.
struct Outcome {
  std::vector<int> retired;
  std::vector<int> handed_back;  // on_failure with iter_idx -1 (never admitted)
  std::vector<std::string> why;  // their errors' messages
};

// A pipeline whose awaitable source gives the batch 1, then suspends on `gate` for the next.
template <class Engine>
struct GatedRig : Rig<Engine> {
  Outcome outcome;
  int calls = 0;

  // `drain`: set before the run, as every between-runs setting.
  GatedRig(Gate& gate, swp::Backend backend, std::chrono::milliseconds drain = 100ms)
      : Rig<Engine>(backend) {
    this->pipe->on_retire([this](const Ctx& c) { outcome.retired.push_back(c.batch); });
    this->pipe->on_failure([this](const Ctx& c, const std::exception_ptr& error) {
      CHECK(c.iter_idx == -1);  // nothing admitted fails in these runs
      outcome.handed_back.push_back(c.batch);
      outcome.why.push_back(swp::test::message_of<swp::Cancelled>(error));
    });
    this->pipe->set_timeouts({.retire = 30s, .check_interval = 5ms, .drain = drain});
    this->pipe->fill_pipeline([this, &gate]() -> swp::Co<std::optional<int>> {
      if (++calls == 1) co_return 1;
      co_return co_await gate.wait();
    });
    // Iteration 0 retires; iteration 1's fetch waits at the gate.
    CHECK(swp::test::iter_of(this->pipe->progress()) == 0);
  }
};

}  // namespace

TEST_CASE_TEMPLATE(
    "a source fetch that ignores cancellation breaks the run by the drain deadline, naming it",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // drain() once waited for such a fetch without a deadline (and the destructor with it), and
  // no error named the fetch.
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    for (const bool by_cancel : {true, false}) {
      CAPTURE(swp::backend_name(backend));
      CAPTURE(by_cancel);
      Gate gate;
      GatedRig<Engine> rig(gate, backend);
      REQUIRE(gate.waiting());
      std::string what;
      try {
        if (by_cancel) {
          CHECK(rig.pipe->cancel("shutdown"));
          (void)rig.pipe->progress();
        } else {
          rig.pipe->drain();
        }
      } catch (const swp::PipelineTimeout& e) {
        what = e.what();
      }
      CAPTURE(what);
      CHECK(swp::test::contains(what, "pipeline could not drain"));
      CHECK(swp::test::contains(what, "the source's fetch of the batch for iteration 1"));
      // Broken while the fetch runs: a refill waits up to the drain deadline, then names it.
      CHECK_THROWS_WITH_AS(rig.pipe->fill_pipeline(std::vector<int>{3}),
                           doctest::Contains("the source's fetch of the batch for iteration 1"),
                           swp::PipelineStateError);
      // Once the fetch returned, the pipeline is whole again.
      REQUIRE(gate.open(2));
      rig.pipe->set_timeouts({.retire = 30s, .drain = 30s});
      rig.pipe->fill_pipeline(std::vector<int>{3});
      CHECK(rig.retire_all() == range(1, 2));  // the new run's batch, numbered on
      CHECK(rig.calls == 2);
    }
  }
}

TEST_CASE_TEMPLATE(
    "the batch of a source fetch that returned after its run broke is handed back exactly once",
    Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // It was dropped when the pipeline was filled again (or destroyed).
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    for (const bool by_destruction : {false, true}) {
      CAPTURE(swp::backend_name(backend));
      CAPTURE(by_destruction);
      Gate gate;
      Outcome outcome;
      {
        GatedRig<Engine> rig(gate, backend);
        REQUIRE(gate.waiting());
        CHECK(rig.pipe->cancel("shutdown"));
        CHECK_THROWS_AS((void)rig.pipe->progress(), swp::PipelineTimeout);  // broken
        // Nothing fetched yet: nothing handed back.
        CHECK(rig.outcome.handed_back.empty());
        REQUIRE(gate.open(2));  // the fetch returns its batch now, on this thread
        rig.pipe->set_timeouts({.retire = 30s, .drain = 30s});
        if (by_destruction) {
          rig.pipe.reset();
        } else {
          rig.pipe->fill_pipeline(std::vector<int>{3});
          CHECK(rig.retire_all() == range(1, 2));
        }
        outcome = rig.outcome;
      }
      // Every batch the source gave (1, 2) and the refill's (3) reached one callback, once.
      CHECK(outcome.retired == (by_destruction ? std::vector<int>{1} : std::vector<int>{1, 3}));
      CHECK(outcome.handed_back == std::vector<int>{2});
      REQUIRE(outcome.why.size() == 1);
      CHECK(swp::test::contains(outcome.why[0], "batch not admitted"));
    }
  }
}

TEST_CASE_TEMPLATE(
    "a source fetch that returns after the run began to end is handed back, not admitted", Engine,
    swp::test::UseClock, swp::test::UseDataFlow) {
  // The fetch was cancelled (drain(), the destruction) but returns a batch within the drain
  // deadline: the drain took no new batch, so the batch goes back to on_failure.
  for (const bool by_destruction : {false, true}) {
    CAPTURE(by_destruction);
    Gate gate;
    Outcome outcome;
    {
      GatedRig<Engine> rig(gate, swp::Backend::host, 30s);
      REQUIRE(gate.waiting());
      std::thread opener([&gate] {
        std::this_thread::sleep_for(20ms);
        gate.open(2);
      });
      if (by_destruction) {
        rig.pipe.reset();
      } else {
        rig.pipe->drain();
      }
      opener.join();
      outcome = rig.outcome;
    }
    CHECK(outcome.retired == std::vector<int>{1});
    CHECK(outcome.handed_back == std::vector<int>{2});
  }
}

// Runs in a child process only (see the next case): the pipeline is destroyed while its
// source's fetch never returns, which must end the process with a fatal error naming it.
TEST_CASE("child: destroying a pipeline whose source fetch never returns is fatal" *
          doctest::skip()) {
  Gate gate;
  GatedRig<swp::test::UseDataFlow> rig(gate, swp::Backend::host);
  rig.pipe.reset();  // aborts after the drain deadline (100 ms), twice
  FAIL("the destructor returned while the source's fetch still ran");
}

TEST_CASE("destroying a pipeline whose source fetch never returns is a fatal error naming it") {
  const swp::test::TempFile err("", ".err");
  const std::string command =
      "timeout 120 " + swp::test::quoted(std::filesystem::read_symlink("/proc/self/exe").string()) +
      " --no-skip --test-case='child: destroying a pipeline whose source fetch never returns is "
      "fatal' >/dev/null 2>" +
      swp::test::quoted(err.str());
  const int status = std::system(command.c_str());
  CHECK(status != 0);
  const std::string what = swp::test::read_text(err.path());
  CAPTURE(what);
  CHECK(swp::test::contains(what, "swp: fatal: a pipeline is destroyed while its source's fetch"));
  CHECK(swp::test::contains(what, "the source's fetch of the batch for iteration 1"));
}

}  // namespace test_pipeline_sources
