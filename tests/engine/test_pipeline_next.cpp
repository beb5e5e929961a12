// co_await Pipeline::next() on a pool with workers: the waits park the awaiting coroutine, and
// the run's deadlines are kept by one periodic timer (detail::ParkedWaitWatch).

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/engines.hpp"
#include "swp/async/co.hpp"
#include "swp/async/detail/frame_allocator.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_start.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/runtime.hpp"

namespace test_pipeline_next {  // each test file's names apart (unity builds)

namespace {

using Ctx = swp::IterContext<std::int64_t>;

// Spins `us` microseconds: long enough that the driver's next() finds the oldest iteration
// unfinished and parks.
void spin_for(std::chrono::microseconds us) {
  const auto until = std::chrono::steady_clock::now() + us;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Three tasks in a chain, one lane each.
swp::Plan<Ctx> chain() {
  swp::Plan<Ctx> plan;
  for (int s = 0; s < 3; ++s)
    plan.add("T" + std::to_string(s), [](Ctx&) { spin_for(std::chrono::microseconds(20)); },
             {.stage = s, .thread_group = "lane" + std::to_string(s)});
  plan.intra_iter_deps = {{"T1", "T0"}, {"T2", "T1"}};
  return plan;
}

// Retires `n` iterations by co_await next(), recording their numbers.
swp::Co<void> retire(swp::Pipeline<Ctx>& pipe, int n, std::vector<std::int64_t>& out) {
  for (int i = 0; i < n; ++i) {
    const auto retired = co_await pipe.next();
    if (!retired) co_return;
    out.push_back(retired->iter());
  }
}

}  // namespace

TEST_CASE_TEMPLATE("co_await next() on a pool: waits that park allocate nothing once warm", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Every thread of the runtime (workers, the timer thread) counts its allocations while the
  // counter is armed; the driving coroutine runs on the workers.
  swp::Runtime rt(
      {.backend = swp::Backend::host, .workers = 2, .on_thread_start = [](const swp::ThreadStart&) {
         swp::test::track_allocations_on_this_thread();
       }});
  auto pipe = Engine::template make<Ctx>(rt, chain(), 3);
  constexpr int warm = 100, counted = 400;
  pipe->fill_pipeline(std::vector<std::int64_t>(warm + counted + 10, 0));
  std::vector<std::int64_t> retired;
  retired.reserve(warm + counted);
  swp::sync_wait(retire(*pipe, warm, retired));
  std::size_t allocations = 0;
  {
    swp::test::AllocationCount count;
    swp::sync_wait(retire(*pipe, counted, retired));
    allocations = count.stop();
  }
  REQUIRE(retired.size() == static_cast<std::size_t>(warm + counted));
  for (std::size_t i = 0; i < retired.size(); ++i)
    CHECK(retired[i] == static_cast<std::int64_t>(i));
  // A timer per parked wait cost a timer-queue node each (about one per iteration here): a
  // warm run allocates nothing (a handful is allowed for a worker's first use of a frame
  // size, on a busy machine where one worker sat out the warm-up). Where coroutine frames are
  // not pooled (sanitizer builds), each next() allocates its two frames (Pipeline::next's and
  // the core's), and the driver its own once.
  const std::size_t frames = swp::detail::frames_pooled() ? 0 : 2 * counted + 1;
  CAPTURE(allocations);
  CAPTURE(frames);
  CHECK(allocations < frames + counted / 20);
  pipe->drain();
}

}  // namespace test_pipeline_next
