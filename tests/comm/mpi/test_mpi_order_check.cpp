// The call order across MPI ranks (run by mpirun with 2 and 4 ranks, every rank runs every case
// in the same order): globally ordered tasks call their collectives in the same order on every
// rank, and the order check fails every rank, naming each rank's call, where they differ.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/async/co.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_order_check {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

namespace {

using IterCtx = swp::IterContext<int>;

// Two independent tasks, A and B, on lanes and streams of their own, each all_reducing its
// value of every iteration on `comm` (A: 10 i + 1, B: 10 i + 2); `ordered` makes them
// globally ordered. `before(task, iter)` runs in the body before its collective is called,
// `called(task, iter)` right after the call (the collective has its place in the
// communicator's call order then), before the body awaits it.
struct TwoCollectives {
  swp::Communicator& comm;
  int iterations;
  bool ordered;
  std::function<void(char, int)> before;
  std::function<void(char, int)> called{};
  std::vector<std::int64_t> a_in{}, b_in{}, a_sum{}, b_sum{};

  swp::Plan<IterCtx> plan() {
    a_in.assign(static_cast<std::size_t>(iterations), 0);
    b_in = a_in;
    a_sum = a_in;
    b_sum = a_in;
    swp::Plan<IterCtx> p;
    add(p, 'A', a_in, a_sum, 1);
    add(p, 'B', b_in, b_sum, 2);
    return p;
  }

  void add(swp::Plan<IterCtx>& p, char name, std::vector<std::int64_t>& in,
           std::vector<std::int64_t>& sum, int offset) {
    p.add(std::string(1, name),
          [this, name, &in, &sum, offset](IterCtx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
            const auto i = static_cast<std::size_t>(ctx.iter_idx);
            in[i] = 10 * ctx.iter_idx + offset;
            if (before) before(name, static_cast<int>(ctx.iter_idx));
            swp::Future<void> reduced =
                comm.all_reduce(scope.stream(), std::span<const std::int64_t>(&in[i], 1),
                                std::span<std::int64_t>(&sum[i], 1), swp::ReduceOp::sum,
                                std::string(1, name) + " iter " + std::to_string(ctx.iter_idx));
            if (called) called(name, static_cast<int>(ctx.iter_idx));
            co_await reduced;
          },
          {.stage = 0,
           .stream = std::string("s") + name,
           .thread_group = std::string("lane") + name,
           .globally_ordered = ordered});
  }
};

}  // namespace

TEST_CASE("mpi: globally ordered tasks call collectives in the same order on every rank") {
  auto world = swp::MpiCommunicator::world();
  world->set_order_check(true);
  const int me = world->rank();
  const int n = world->size();
  constexpr int iterations = 8;
  // Each rank would call them in another order: rank 0 is slow to call A, the others to call
  // B. The sequencer gives every rank the same order anyway.
  TwoCollectives run{*world, iterations, /*ordered=*/true, [me](char task, int) {
                       if ((me == 0) == (task == 'A')) std::this_thread::sleep_for(20ms);
                     }};
  swp::Runtime rt({.workers = 2});
  swp::DataFlowPipeline<IterCtx> pipe(rt, run.plan(), 2);
  std::vector<int> batches(iterations);
  CHECK(pipe.run(batches).iterations == iterations);
  for (int i = 0; i < iterations; ++i) {
    CAPTURE(i);
    CHECK(run.a_sum[static_cast<std::size_t>(i)] == static_cast<std::int64_t>(n) * (10 * i + 1));
    CHECK(run.b_sum[static_cast<std::size_t>(i)] == static_cast<std::int64_t>(n) * (10 * i + 2));
  }
}

TEST_CASE("mpi: without the sequencer, ranks calling in different orders fail on every rank") {
  auto world = swp::MpiCommunicator::world();
  world->set_order_check(true);
  world->set_timeout(20s);
  const int me = world->rank();
  if (world->size() < 2) return;
  // Rank 0 calls B before A, every other rank A before B: each task waits until the other
  // one's collective was called (it took its place in the call order), so the orders differ
  // however the threads are scheduled. Neither calls before both started: the first mismatch
  // fails the run, and a task not started by then would be cancelled, leaving the other
  // ranks' second order check to time out in MPI (the communicator would be destroyed with
  // it pending, and the session would end without MPI_Finalize).
  std::atomic<int> started{0};
  std::atomic<bool> a_called{false}, b_called{false};
  const auto wait_until = [](const auto& ready) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  };
  TwoCollectives run{*world, 1, /*ordered=*/false,
                     [&](char task, int) {
                       ++started;
                       wait_until([&] { return started.load() == 2; });
                       if (task == 'A' && me == 0) wait_until([&] { return b_called.load(); });
                       if (task == 'B' && me != 0) wait_until([&] { return a_called.load(); });
                     },
                     [&](char task, int) { (task == 'A' ? a_called : b_called) = true; }};
  swp::Runtime rt({.workers = 2});
  swp::DataFlowPipeline<IterCtx> pipe(rt, run.plan(), 1);
  std::vector<int> batches(1);
  try {
    pipe.run(batches);
    FAIL("the mismatched order went unnoticed on rank " << me);
  } catch (const swp::TaskError& e) {
    CHECK(e.iter() == 0);
    CHECK((e.task() == "A" || e.task() == "B"));
    try {
      std::rethrow_exception(e.nested());
    } catch (const swp::CommError& comm) {
      const std::string what = comm.what();
      CAPTURE(what);
      CHECK(comm.rank() == me);
      CHECK(what.find("the ranks called different collectives here") != std::string::npos);
      // Each rank's operation is named (which of the two collectives failed first on this
      // rank depends on its threads: either names rank 0's and rank 1's different calls).
      CHECK(what.find("rank 0 all_reduce '") != std::string::npos);
      CHECK(what.find("rank 1 all_reduce '") != std::string::npos);
      CHECK(what.find("'A iter 0'") != std::string::npos);
      CHECK(what.find("'B iter 0'") != std::string::npos);
    }
  }
}

TEST_CASE("mpi: the order check tells calls apart that differ only at the end of a long name") {
  auto world = swp::MpiCommunicator::world();
  world->set_order_check(true);
  world->set_timeout(20s);
  const int me = world->rank();
  if (world->size() < 2) return;
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  // Every rank at another iteration of the same long-named task: different collectives, whose
  // descriptions are the same for more than the 119 characters the check exchanges as text.
  const std::string task(110, 'T');
  const std::string what = task + " iter " + std::to_string(me);
  std::int64_t mine = 1, sum = 0;
  auto reduced = world->all_reduce(s, std::span<const std::int64_t>(&mine, 1),
                                   std::span<std::int64_t>(&sum, 1), swp::ReduceOp::sum, what);
  s.synchronize();
  REQUIRE(reduced.ready());
  try {
    reduced.get();
    FAIL("rank " << me << ": the different calls passed the order check, sum " << sum);
  } catch (const swp::CommError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find("the ranks called different collectives here") != std::string::npos);
    // The message shows where they differ: each text's tail, with the iteration and the type.
    CHECK(message.find("iter 0' (1 i64), rank 1 ") != std::string::npos);
    CHECK(message.find("iter 1' (1 i64)") != std::string::npos);
  }
  // Nothing was run: the communicator goes on.
  finish(s, world->all_reduce(s, std::span<const std::int64_t>(&mine, 1),
                              std::span<std::int64_t>(&sum, 1), swp::ReduceOp::sum, task));
  CHECK(sum == world->size());
}

}  // namespace test_mpi_order_check
