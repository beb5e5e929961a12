// How a pipeline's ready instances spread over the runtime's threads: the caller that drives a
// pipeline must not keep to itself what another thread could run meanwhile.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_parallelism {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;

}  // namespace

TEST_CASE_TEMPLATE("ready tasks of one iteration run at once on the caller and a worker", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Two independent tasks meet in each iteration: each waits (up to a deadline, no hang) until
  // the other arrived. Whichever the caller runs while it drives, the worker must get the
  // other meanwhile: no engine may run a period's (or an admission's) ready instances on the
  // driving thread one after the other when another thread could take them.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  constexpr std::int64_t iterations = 6;
  std::atomic<int> arrived{0};
  std::atomic<bool> alone{false};
  const auto meet = [&](Ctx& ctx) {
    arrived.fetch_add(1);
    const int both = 2 * static_cast<int>(ctx.iter_idx + 1);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (arrived.load() < both) {
      if (std::chrono::steady_clock::now() > deadline) {
        alone.store(true);
        return;
      }
      std::this_thread::yield();
    }
  };
  swp::Plan<Ctx> plan;
  plan.add("A", meet, {.stage = 0, .thread_group = "a"});
  plan.add("B", meet, {.stage = 0, .thread_group = "b"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 1);
  std::vector<std::uint64_t> batches(iterations);
  pipe->fill_pipeline(batches);
  std::int64_t retired = 0;
  while (pipe->progress()) ++retired;
  CHECK(retired == iterations);
  CHECK_FALSE(alone.load());
}

}  // namespace test_pipeline_parallelism
