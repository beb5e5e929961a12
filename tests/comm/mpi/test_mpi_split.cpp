// MpiCommunicator::split across processes (run by mpirun with 2 and 4 ranks, every rank runs
// every case in the same order): process groups reduce within their members, and a split that a
// listed rank does not call fails by its deadline, naming that rank.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_split {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

TEST_CASE("mpi: process groups reduce within their members only") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  const int me = world->rank();
  std::vector<int> even, odd;
  for (int r = 0; r < n; ++r) (r % 2 == 0 ? even : odd).push_back(r);
  const std::vector<int>& mine = me % 2 == 0 ? even : odd;
  auto group = world->split(mine);
  REQUIRE(group != nullptr);
  CHECK(group->size() == static_cast<int>(mine.size()));
  CHECK(group->rank() == me / 2);
  std::vector<std::int64_t> value{me}, sum(1);
  finish(s, group->all_reduce(s, std::span<const std::int64_t>(value), std::span<std::int64_t>(sum),
                              swp::ReduceOp::sum, "group"));
  std::int64_t expected = 0;
  for (int r : mine) expected += r;
  CHECK(sum[0] == expected);
  const std::vector<int> twice{me, me};
  CHECK_THROWS_AS(world->split(twice), std::invalid_argument);
  const std::vector<int> others{(me + 1) % n};
  if (n > 1) CHECK_THROWS_AS(world->split(others), std::invalid_argument);
}

TEST_CASE("mpi: split fails by its deadline, naming the listed rank that did not call it") {
  auto world = swp::MpiCommunicator::world();
  auto control = swp::MpiCommunicator::world();  // tells rank 1 that rank 0 gave up
  const int me = world->rank();
  if (world->size() < 2) return;
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  swp::Stream& c = rt.stream("control");
  const std::vector<int> pair{0, 1};
  std::int32_t token = 0;
  if (me == 0) {
    world->set_timeout(300ms);
    try {
      auto group = world->split(pair);
      FAIL("split returned although rank 1 did not call it");
    } catch (const swp::CommTimeout& e) {
      CHECK(e.rank() == 0);
      CHECK(e.op() == "split");
      CHECK(std::string(e.what()) ==
            "rank 0: split of ranks [0, 1] did not complete in 300 ms: rank(s) [1] did not call "
            "split (every listed rank must)");
    }
    finish(c, control->send(c, std::span<const std::int32_t>(&token, 1), 1));
  } else if (me == 1) {
    finish(c, control->recv(c, std::span<std::int32_t>(&token, 1), 0));
    // Late: rank 0 gave up on this split, and says so — no creation waits for it alone.
    try {
      auto group = world->split(pair);
      FAIL("a split rank 0 gave up on returned");
    } catch (const swp::CommTimeout& e) {
      FAIL("not told that rank 0 gave up: " << e.what());
    } catch (const swp::CommError& e) {
      CHECK(e.rank() == 1);
      CHECK(e.op() == "split");
      CHECK(std::string(e.what()) ==
            "rank 1: split of ranks [0, 1] was not run: rank 0 gave up on it (a listed rank did "
            "not call split by its deadline)");
    }
  }
  if (me > 1) return;
  // Called again by both, it makes the group (the first attempt's messages left over are
  // told apart), which works.
  world->set_timeout(60s);
  auto group = world->split(pair);
  REQUIRE(group != nullptr);
  CHECK(group->size() == 2);
  std::int64_t one = 1, sum = 0;
  finish(s, group->all_reduce(s, std::span<const std::int64_t>(&one, 1),
                              std::span<std::int64_t>(&sum, 1), swp::ReduceOp::sum, "pair"));
  CHECK(sum == 2);
}

}  // namespace test_mpi_split
