// MPI operations past their deadline (run by mpirun with 2 and 4 ranks, every rank runs every
// case in the same order): a rank that does not take part fails the others' operation with
// CommTimeout, and keep_until_done keeps a timed-out operation's buffers while MPI may still
// write them.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_timeout {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

TEST_CASE("mpi: a rank that does not take part fails the others' operation by its deadline") {
  auto world = swp::MpiCommunicator::world();
  auto control = swp::MpiCommunicator::world();  // tells rank 0 when the others timed out
  world->set_timeout(300ms);
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  swp::Stream& c = rt.stream("control");
  const int me = world->rank();
  const int n = world->size();
  std::vector<std::int64_t> value{1}, sum(1);
  if (me == 0) {
    // Rank 0 fails before its collective (a task error) and comes back to it only once every
    // other rank's operation timed out: they must not hang, and must say who timed out on what.
    // Its own operation is expected to complete: it gets a deadline a slow host meets.
    world->set_timeout(60s);
    std::vector<std::int32_t> told(static_cast<std::size_t>(n));
    for (int r = 1; r < n; ++r)
      finish(c, control->recv(
                    c, std::span<std::int32_t>(told).subspan(static_cast<std::size_t>(r), 1), r));
  }
  auto done = world->all_reduce(s, std::span<const std::int64_t>(value),
                                std::span<std::int64_t>(sum), swp::ReduceOp::sum, "Backward");
  s.synchronize();
  REQUIRE(done.ready());
  if (me == 0 || n == 1) {
    CHECK_NOTHROW(done.get());  // the others' operations are still under way in MPI: it matches
    CHECK(sum[0] == n);
  } else {
    try {
      done.get();
      FAIL("no timeout on rank " << me);
    } catch (const swp::CommTimeout& e) {
      CHECK(e.rank() == me);
      CHECK(e.op() == "all_reduce");
      const std::string what = e.what();
      CHECK(what.find("rank " + std::to_string(me) + ": all_reduce 'Backward' (1 i64)") !=
            std::string::npos);
      CHECK(what.find("did not complete in 300 ms") != std::string::npos);
    }
    const std::vector<std::int32_t> timed_out{me};
    finish(c, control->send(c, std::span<const std::int32_t>(timed_out), 0));
  }
  // Rank 0 joined late: the timed-out operation completes in MPI, and the communicator goes on
  // (the next collective completes after it, in order).
  world->set_timeout(60s);
  std::vector<std::int64_t> again(1);
  finish(s, world->all_reduce(s, std::span<const std::int64_t>(value),
                              std::span<std::int64_t>(again), swp::ReduceOp::sum, "after"));
  CHECK(again[0] == n);
}

TEST_CASE("mpi: keep_until_done keeps an owner while an operation that timed out is under way") {
  auto control = swp::MpiCommunicator::world();  // tells rank 0 when the others timed out
  auto world = swp::MpiCommunicator::world();
  const int me = world->rank();
  const int n = world->size();
  if (n < 2) return;
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  swp::Stream& c = rt.stream("control");
  // The operation's buffers, owned as a batch's are: the communicator keeps them.
  struct Buffers {
    std::int64_t value = 1, sum = 0;
  };
  auto buffers = std::make_shared<Buffers>();
  const std::weak_ptr<Buffers> watched = buffers;
  world->set_timeout(me == 0 ? 60s : 300ms);
  if (me == 0) {
    // Rank 0 joins only once every other rank's operation timed out.
    std::vector<std::int32_t> told(static_cast<std::size_t>(n));
    for (int r = 1; r < n; ++r)
      finish(c, control->recv(
                    c, std::span<std::int32_t>(told).subspan(static_cast<std::size_t>(r), 1), r));
  }
  auto done =
      world->all_reduce(s, std::span<const std::int64_t>(&buffers->value, 1),
                        std::span<std::int64_t>(&buffers->sum, 1), swp::ReduceOp::sum, "late");
  world->keep_until_done(std::move(buffers));
  s.synchronize();
  REQUIRE(done.ready());
  if (me == 0) {
    CHECK_NOTHROW(done.get());
    CHECK(watched.expired());  // let go as the operation ended
  } else {
    CHECK_THROWS_AS(done.get(), swp::CommTimeout);
    // Still under way in MPI, which may write the buffers once rank 0 joins: kept.
    CHECK_FALSE(watched.expired());
    const std::vector<std::int32_t> timed_out{me};
    finish(c, control->send(c, std::span<const std::int32_t>(timed_out), 0));
  }
  world.reset();  // waits once more for what timed out: rank 0 joined it, MPI completed it
  CHECK(watched.expired());
}

}  // namespace test_mpi_timeout
