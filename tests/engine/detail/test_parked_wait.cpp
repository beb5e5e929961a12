#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/eventually.hpp"
#include "swp/async/co.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/async/timer_queue.hpp"
#include "swp/engine/detail/parked_wait.hpp"

namespace test_parked_wait {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::detail::ParkedWait;
using swp::detail::ParkedWaitWatch;
using swp::test::eventually;

namespace {

// A pool with one worker, a watch whose ticks notify it, and a flag as the condition.
struct Fixture {
  swp::ThreadPoolScheduler pool{1};
  swp::TimerQueue timers;
  ParkedWaitWatch watch{timers, [this] { pool.notify(); }};
  std::atomic<bool> flag{false};
  std::atomic<int> watches{0};
  std::atomic<int> unwatches{0};

  static bool flag_holds(const void* self) noexcept {
    return static_cast<const Fixture*>(self)->flag.load(std::memory_order_seq_cst);
  }
  ParkedWait::Condition condition() const { return {this, &flag_holds}; }
};

// The outcome of one wait, written by whichever thread resumes the coroutine.
struct Outcome {
  std::atomic<bool> done{false};
  bool result = false;
  std::thread::id resumed_on;
};

swp::Co<void> wait_once(Fixture& f, Outcome& out, std::chrono::milliseconds limit,
                        const swp::StopSignal* abandon, ParkedWait::ExtraWakeups extra) {
  out.result = co_await ParkedWait(f.pool, f.watch, f.condition(), limit, 1ms, abandon, extra);
  out.resumed_on = std::this_thread::get_id();
}

// Starts the wait on this thread (it runs until it parks or finishes).
swp::Co<void> start(Fixture& f, Outcome& out, std::chrono::milliseconds limit,
                    const swp::StopSignal* abandon = nullptr, ParkedWait::ExtraWakeups extra = {}) {
  swp::Co<void> co = wait_once(f, out, limit, abandon, extra);
  co.start(
      nullptr,
      [](void* context, std::exception_ptr&) noexcept {
        static_cast<Outcome*>(context)->done.store(true, std::memory_order_seq_cst);
      },
      &out);
  return co;
}

}  // namespace

TEST_CASE("ParkedWait does not suspend when its condition holds already") {
  Fixture f;
  f.flag = true;
  Outcome out;
  auto co = start(f, out, 10s);
  CHECK(out.done.load());  // finished inside start, on this thread
  CHECK(out.result);
  CHECK(out.resumed_on == std::this_thread::get_id());
}

TEST_CASE("ParkedWait holds no thread until a notify finds its condition true") {
  Fixture f;
  Outcome out;
  auto co = start(f, out, std::chrono::milliseconds::max());
  CHECK_FALSE(out.done.load());  // parked: start returned
  f.pool.notify();               // looks again: still false, parks again
  f.flag.store(true, std::memory_order_seq_cst);
  f.pool.notify();
  REQUIRE(eventually([&] { return out.done.load(); }));
  CHECK(out.result);
  CHECK(out.resumed_on != std::this_thread::get_id());  // resumed by the pool's worker
}

TEST_CASE("ParkedWait resumes with false once its deadline passed, by the watch's ticks alone") {
  Fixture f;
  Outcome out;
  auto co = start(f, out, 2ms);
  // Nobody notifies: only the watch's ticks (every 1 ms) can end the wait.
  REQUIRE(eventually([&] { return out.done.load(); }));
  CHECK_FALSE(out.result);
}

TEST_CASE("ParkedWait resumes when the awaiter abandons it, and not as expired") {
  Fixture f;
  swp::StopSignal abandon;
  Outcome out;
  auto co = start(f, out, std::chrono::milliseconds::max(), &abandon);
  CHECK_FALSE(out.done.load());
  abandon.request_stop("caller gave up");  // notifies the scheduler itself
  REQUIRE(eventually([&] { return out.done.load(); }));
  CHECK(out.result);  // not expired: the caller tells an abandon by its signal
  CHECK_FALSE(f.flag.load());
}

TEST_CASE("ParkedWait's extra wake-ups: watched as it parks until they take, unwatched once") {
  Fixture f;
  ParkedWait::ExtraWakeups extra{
      &f,
      [](void* self) {
        auto& fx = *static_cast<Fixture*>(self);
        // Takes on the second park only (as the pipeline's device watch does once the oldest
        // iteration is retirable).
        return fx.watches.fetch_add(1) + 1 >= 2;
      },
      [](void* self) { static_cast<Fixture*>(self)->unwatches.fetch_add(1); }};
  Outcome out;
  auto co = start(f, out, std::chrono::milliseconds::max(), nullptr, extra);
  CHECK(f.watches.load() >= 1);  // (a tick may have made it park again already)
  f.pool.notify();               // parks again: the watch takes
  REQUIRE(eventually([&] { return f.watches.load() == 2; }));
  f.pool.notify();  // parks again: not asked any more
  f.flag.store(true, std::memory_order_seq_cst);
  f.pool.notify();
  REQUIRE(eventually([&] { return out.done.load(); }));
  CHECK(f.watches.load() == 2);
  CHECK(f.unwatches.load() == 1);
}

}  // namespace test_parked_wait
