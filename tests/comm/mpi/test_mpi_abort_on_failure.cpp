// abort_peers_on_failure across MPI ranks (run by mpirun with 2 and 4 ranks; every rank runs
// every case in the same order): one rank's task throws, and every rank's run fails within a
// second — not after its collectives' timeout — naming that rank, the task and the iteration.

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/comm/abort_on_failure.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_abort_on_failure {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;
using Clock = std::chrono::steady_clock;

constexpr int iterations = 8;
constexpr std::int64_t failing_iter = 3;

// What the collectives read and write, per task and iteration. A collective an abort gave up
// is still under way in MPI, which may write it until the process ends: kept until then.
struct Buffers {
  std::array<std::array<std::int64_t, iterations>, 2> in{};
  std::array<std::array<std::int64_t, iterations>, 2> out{};
};

Buffers& lasting_buffers() {
  static std::vector<std::unique_ptr<Buffers>> all;  // freed after MPI_Finalize
  return *all.emplace_back(std::make_unique<Buffers>());
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

double ms_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

// Forward (stage 0) and Backward (stage 1, after Forward) on lanes and streams of their own,
// globally ordered, each all_reducing one value per iteration on `world`; on `failing_rank`,
// Forward of `failing_iter` throws instead (its time in `thrown_at`).
swp::Plan<Ctx> two_collectives(swp::Communicator& world, Buffers& b, int failing_rank,
                               std::atomic<std::int64_t>& thrown_at) {
  swp::Plan<Ctx> plan;
  const auto add = [&](int task, const std::string& name) {
    return plan.add(
        name,
        [&world, &b, &thrown_at, failing_rank, task, name](Ctx& ctx,
                                                           swp::TaskScope& scope) -> swp::Co<void> {
          const auto i = static_cast<std::size_t>(ctx.iter_idx);
          if (task == 0 && world.rank() == failing_rank && ctx.iter_idx == failing_iter) {
            thrown_at = now_ns();
            throw std::runtime_error("corrupt record at offset 4096");
          }
          b.in[task][i] = world.rank() + 1;
          co_await world.all_reduce(scope.stream(),
                                    std::span<const std::int64_t>(&b.in[task][i], 1),
                                    std::span<std::int64_t>(&b.out[task][i], 1), swp::ReduceOp::sum,
                                    name + " iter " + std::to_string(i));
        },
        {.stage = task, .stream = name, .thread_group = name, .globally_ordered = true});
  };
  auto forward = add(0, "Forward");
  auto backward = add(1, "Backward");
  plan.intra_iter_deps.push_back({backward, forward});
  return plan;
}

}  // namespace

TEST_CASE("mpi: a task failing on one rank fails every rank's run within a second") {
  auto world = swp::MpiCommunicator::world();
  auto clocks = swp::MpiCommunicator::world();  // gathers the times (never aborted)
  const int me = world->rank();
  const int n = world->size();
  if (n < 2) return;
  const int failing_rank = n - 1;
  // Without the abort the other ranks would wait out this timeout.
  world->set_timeout(60s);
  Buffers& b = lasting_buffers();
  std::atomic<std::int64_t> thrown_at{0};
  swp::Runtime rt({.workers = 2});
  swp::DataFlowPipeline<Ctx> pipe(rt, two_collectives(*world, b, failing_rank, thrown_at), 2);
  swp::abort_peers_on_failure(pipe, *world);
  const std::string reason = "task 'Forward' failed in iteration 3: corrupt record at offset 4096";
  std::vector<int> batches(iterations);
  const std::int64_t started_at = now_ns();
  std::int64_t failed_at = 0;
  try {
    pipe.run(batches);
    FAIL("rank " << me << "'s run did not fail");
  } catch (const swp::TaskError& e) {
    failed_at = now_ns();
    const std::string what = e.what();
    CAPTURE(what);
    try {
      std::rethrow_exception(e.nested());
    } catch (const swp::CommAborted& aborted) {
      // Every other rank: its own task and iteration fail, naming the failed rank's.
      CHECK(me != failing_rank);
      CHECK(aborted.rank() == me);
      CHECK(aborted.aborting_rank() == failing_rank);
      CHECK(aborted.reason() == reason);
      CHECK(what.find("rank " + std::to_string(me) + ": all_reduce '") != std::string::npos);
      CHECK(what.find("rank " + std::to_string(failing_rank) + " aborted: " + reason) !=
            std::string::npos);
    } catch (const std::runtime_error& own) {
      CHECK(me == failing_rank);
      CHECK(e.task() == "Forward");
      CHECK(e.iter() == failing_iter);
      CHECK(std::string(own.what()) == "corrupt record at offset 4096");
    }
  }
  CHECK(world->aborted());
  CHECK(world->abort_reason() == "rank " + std::to_string(failing_rank) + " aborted: " + reason);
  // The bound: far above the target (1 s) for a busy 2-core machine, far below the timeout.
  CHECK(ms_between(started_at, failed_at) < 5000.0);
  // From the throw to each rank's failure, on one clock (mpirun starts the ranks on one host).
  std::array<std::int64_t, 2> mine{thrown_at.load(), failed_at};
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(n));
  swp::Stream& s = rt.stream("clocks");
  auto gathered = clocks->all_gather(s, std::span<const std::int64_t>(mine),
                                     std::span<std::int64_t>(all), "clocks");
  s.synchronize();
  REQUIRE(gathered.ready());
  gathered.get();
  if (me == 0) {
    const std::int64_t thrown = all[2 * static_cast<std::size_t>(failing_rank)];
    std::string line = "abort propagation, " + std::to_string(n) + " ranks, from the throw:";
    for (int r = 0; r < n; ++r) {
      char ms[32];
      std::snprintf(ms, sizeof ms, " %.1f ms",
                    ms_between(thrown, all[2 * static_cast<std::size_t>(r) + 1]));
      line += " rank " + std::to_string(r) + ms;
    }
    MESSAGE(line);
  }
}

}  // namespace test_mpi_abort_on_failure
