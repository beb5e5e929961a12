// How a pipeline's ready instances spread over the runtime's threads: the caller that drives a
// pipeline must not keep to itself what another thread could run meanwhile.

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/eventually.hpp"
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

TEST_CASE_TEMPLATE("a source that waits for a released task of an earlier iteration is not blocked",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Iteration i's batch is only given once B of iteration i - 1 ran. The clock releases that
  // B in the period that asks the source for i, the data-flow engine once A of i - 1 finished:
  // either way the caller is inside the source then, so a worker must be able to take B (it
  // must not be held back for the caller to run after the source returns).
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  constexpr std::int64_t iterations = 8;
  std::atomic<std::int64_t> b_done{-1};
  std::atomic<bool> starved{false};
  swp::Plan<Ctx> plan;
  plan.add("A", [](Ctx&) {}, {.stage = 0, .thread_group = "a"});
  plan.add("B", [&](Ctx& ctx) { b_done.store(ctx.iter_idx); }, {.stage = 1, .thread_group = "b"});
  plan.intra_iter_deps.push_back({"B", "A"});
  auto pipe = Engine::template make<Ctx>(rt, plan, 2);
  std::uint64_t next = 0;
  pipe->fill_pipeline([&]() -> std::optional<std::uint64_t> {
    if (next == iterations) return std::nullopt;
    const auto previous = static_cast<std::int64_t>(next) - 1;
    if (!swp::test::eventually([&] { return b_done.load() >= previous; }, 20s))
      starved.store(true);
    return next++;
  });
  std::int64_t retired = 0;
  while (pipe->progress()) ++retired;
  CHECK(retired == iterations);
  CHECK_FALSE(starved.load());
}

TEST_CASE_TEMPLATE("long tasks of one period run on the caller and a worker", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Four stages of independent 200 µs tasks, four iterations in flight: the engines spread a
  // period's (an admission's) ready tasks over both threads, so somewhere two run at once.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  const auto busy = [&](Ctx&) {
    const int now = running.fetch_add(1) + 1;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    const auto until = std::chrono::steady_clock::now() + 200us;
    while (std::chrono::steady_clock::now() < until) {
    }
    running.fetch_sub(1);
  };
  swp::Plan<Ctx> plan;
  const std::array<std::string, 4> names{"S0", "S1", "S2", "S3"};
  for (int s = 0; s < 4; ++s)
    plan.add(names[static_cast<std::size_t>(s)], busy,
             {.stage = s, .thread_group = names[static_cast<std::size_t>(s)]});
  auto pipe = Engine::template make<Ctx>(rt, plan, 4);
  // Until two ran at once (a busy host may keep the worker off its CPU for a while), within
  // a bound that no correct engine reaches.
  std::int64_t retired = 0;
  for (int run = 0; run < 50 && most.load() < 2; ++run) {
    pipe->fill_pipeline(std::vector<std::uint64_t>(64));
    while (pipe->progress()) ++retired;
  }
  CHECK(most.load() >= 2);
  CHECK(retired % 64 == 0);
}

TEST_CASE_TEMPLATE("pipelines driven from several threads share a runtime without workers",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Each caller is its pool's only runner while it drives: the data-flow engine runs an
  // admission's ready tasks where it is (RunQueueHooks::RunHere), the clock a period's. The
  // pipelines share two lanes, so one caller's kept or in-place work is another's lane turn:
  // every pipeline must still retire every iteration, each body once.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 0});
  constexpr int callers = 3;
  constexpr int runs = 4;
  constexpr std::int64_t iterations = 300;
  constexpr int tasks = 4;
  std::atomic<long> bodies{0};
  const std::array<std::string, tasks> names{"T0", "T1", "T2", "T3"};
  swp::Plan<Ctx> plan;
  for (int s = 0; s < tasks; ++s)
    plan.add(names[static_cast<std::size_t>(s)], [&bodies](Ctx&) { bodies.fetch_add(1); },
             {.stage = s, .thread_group = s % 2 == 0 ? "lane0" : "lane1"});
  for (std::size_t s = 1; s < tasks; ++s) plan.intra_iter_deps.push_back({names[s], names[s - 1]});
  plan.inter_iter_deps.push_back({"T1", "T2"});
  std::vector<std::int64_t> retired(callers, 0);
  {
    std::vector<std::jthread> threads;
    for (int c = 0; c < callers; ++c) {
      threads.emplace_back([&, c] {
        for (int r = 0; r < runs; ++r) {
          auto pipe = Engine::template make<Ctx>(rt, plan, 3);
          pipe->fill_pipeline(std::vector<std::uint64_t>(iterations));
          while (pipe->progress()) ++retired[static_cast<std::size_t>(c)];
        }
      });
    }
  }
  for (int c = 0; c < callers; ++c) CHECK(retired[static_cast<std::size_t>(c)] == runs * iterations);
  CHECK(bodies.load() == long{callers} * runs * iterations * tasks);
}

}  // namespace test_pipeline_parallelism
