// Communicator::abort on MPI (run by mpirun with 2 and 4 ranks, every rank runs every case in
// the same order): an abort fails every rank's pending and later operations at once, and an
// operation that fails after taking its place in the call order (its stream refuses it, its
// when_started throws) aborts the communicator on every rank.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_abort {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

namespace {

// Waits (with a deadline) until `future` is ready; how long it took.
std::chrono::milliseconds until_ready(const swp::Future<void>& future) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + 10s;
  while (!future.ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

// The CommAborted `future` failed with (a failed CHECK when it is none).
swp::CommAborted aborted_error(const swp::Future<void>& future) {
  try {
    future.get();
    FAIL("the operation did not fail");
  } catch (const swp::CommAborted& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("not CommAborted: " << e.what());
  }
  return swp::CommAborted(-1, "", "", -1, "");
}

// Buffers of collectives an abort gave up: MPI may still write them until the process ends.
struct AbortedBuffers {
  std::int64_t one = 1, sum = 0, queued_sum = 0, later_sum = 0, group_sum = 0, received = 0;
};
AbortedBuffers& lasting_aborted_buffers() {
  static std::vector<std::unique_ptr<AbortedBuffers>> all;  // freed after MPI_Finalize
  return *all.emplace_back(std::make_unique<AbortedBuffers>());
}

}  // namespace

TEST_CASE("mpi: abort fails every rank's pending operations at once, and every later one") {
  auto world = swp::MpiCommunicator::world();
  auto control = swp::MpiCommunicator::world();  // tells the aborting rank the others called
  world->set_timeout(60s);  // the abort, not a timeout, is what ends the pending operation
  const int me = world->rank();
  const int n = world->size();
  if (n < 2) return;
  constexpr int aborting = 1;
  std::vector<int> parity;
  for (int r = me % 2; r < n; r += 2) parity.push_back(r);
  auto group = world->split(parity);  // aborts with its world
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  swp::Stream& busy = rt.stream("busy");
  swp::Stream& c = rt.stream("control");
  AbortedBuffers& b = lasting_aborted_buffers();
  const auto one = std::span<const std::int64_t>(&b.one, 1);
  const std::string reason = "rank 1 aborted: planted failure";
  if (me != aborting) {
    // The aborting rank never joins this one.
    auto pending = world->all_reduce(s, one, std::span<std::int64_t>(&b.sum, 1), swp::ReduceOp::sum,
                                     "Backward");
    // Nor sends this (called before the queued one below, it starts: an abort withdraws it from
    // MPI with MPI_Cancel).
    auto receive = world->recv(rt.stream("recv"), std::span<std::int64_t>(&b.received, 1), aborting,
                               "never sent");
    // And this one waits in its stream's queue, behind work that ends only once it failed (or
    // after 10 s): the abort fails it there, without the stream getting to it.
    std::atomic<bool> called{false};
    std::atomic<bool> failed_in_queue{false};
    swp::Future<void> queued;
    busy.enqueue([&] {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!(called && queued.ready()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      failed_in_queue = called && queued.ready();
    });
    queued = world->all_reduce(busy, one, std::span<std::int64_t>(&b.queued_sum, 1),
                               swp::ReduceOp::sum, "Queued");
    called = true;
    const std::vector<std::int32_t> ready{me};
    finish(c, control->send(c, std::span<const std::int32_t>(ready), aborting));
    const auto took = until_ready(pending);
    MESSAGE("rank " << me << ": the pending all_reduce failed " << took.count()
                    << " ms after this rank told rank 1 to abort");
    CHECK(took < 5s);  // the target is 1 s; the bound is generous for a busy machine
    REQUIRE(pending.ready());
    const swp::CommAborted e = aborted_error(pending);
    CHECK(e.rank() == me);
    CHECK(e.op() == "all_reduce");
    CHECK(e.aborting_rank() == aborting);
    CHECK(e.reason() == "planted failure");
    CHECK(std::string(e.what()) ==
          "rank " + std::to_string(me) + ": all_reduce 'Backward' (1 i64) failed: " + reason);
    rt.stream("recv").synchronize();
    CHECK(aborted_error(receive).op() == "recv");
    busy.synchronize();
    CHECK(failed_in_queue);
    CHECK(std::string(aborted_error(queued).what()).find("all_reduce 'Queued'") !=
          std::string::npos);
  } else {
    std::vector<std::int32_t> told(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      if (r != me)
        finish(c, control->recv(
                      c, std::span<std::int32_t>(told).subspan(static_cast<std::size_t>(r), 1), r));
    world->abort("planted failure");
  }
  // Every rank, the aborting one too: aborted, and a later operation fails at once, not run.
  CHECK(world->aborted());
  CHECK(world->abort_reason() == reason);
  auto later = world->all_reduce(s, one, std::span<std::int64_t>(&b.later_sum, 1),
                                 swp::ReduceOp::sum, "Later");
  REQUIRE(later.ready());
  CHECK(std::string(aborted_error(later).what()) ==
        "rank " + std::to_string(me) + ": all_reduce 'Later' (1 i64) was not run: " + reason);
  CHECK(group->aborted());
  auto in_group = group->all_reduce(s, one, std::span<std::int64_t>(&b.group_sum, 1),
                                    swp::ReduceOp::sum, "Group");
  REQUIRE(in_group.ready());
  CHECK(aborted_error(in_group).aborting_rank() == aborting);
  world->abort("a second failure");  // the first abort wins
  CHECK(world->abort_reason() == reason);
  // A new world is not aborted, and an abort message meant for the old one does not reach it.
  auto fresh = swp::MpiCommunicator::world();
  CHECK_FALSE(fresh->aborted());
  std::int64_t all = 0;
  finish(s, fresh->all_reduce(s, one, std::span<std::int64_t>(&all, 1), swp::ReduceOp::sum));
  CHECK(all == n);
}

namespace {

// A stream that takes no work, as one shutting down would not.
class RefusingStream final : public swp::Stream {
 public:
  RefusingStream() : swp::Stream("refusing") {}
  using swp::Stream::wait;
  void enqueue_work(swp::Clock::duration, swp::WorkTag) override { refuse(); }
  void enqueue(std::function<void()>, swp::Clock::duration, swp::WorkTag) override { refuse(); }
  std::uint64_t record(swp::Event&) override { refuse(); }
  void wait(const swp::Event&, std::uint64_t) override { refuse(); }
  void synchronize() override {}
  void enqueue_fault(std::string) override { refuse(); }

 private:
  [[noreturn]] static void refuse() { throw std::runtime_error("stream 'refusing' takes no work"); }
};

}  // namespace

TEST_CASE("mpi: an operation its stream refuses aborts the communicator on every rank") {
  auto world = swp::MpiCommunicator::world();
  world->set_timeout(20s);  // only without the abort would anything wait for it
  const int me = world->rank();
  if (world->size() < 2) return;
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  AbortedBuffers& b = lasting_aborted_buffers();
  const auto one = std::span<const std::int64_t>(&b.one, 1);
  if (me == 0) {
    // Its ticket was taken: without the abort, rank 0's next operation would wait for that
    // turn, and the others' first one would pair with rank 0's second.
    RefusingStream refusing;
    CHECK_THROWS_WITH_AS(world->all_reduce(refusing, one, std::span<std::int64_t>(&b.sum, 1),
                                           swp::ReduceOp::sum, "refused"),
                         "stream 'refusing' takes no work", std::runtime_error);
    CHECK(world->aborted());
  }
  auto next = world->all_reduce(s, one, std::span<std::int64_t>(&b.later_sum, 1),
                                swp::ReduceOp::sum, "next");
  s.synchronize();
  REQUIRE(next.ready());
  const swp::CommAborted e = aborted_error(next);
  CHECK(e.aborting_rank() == 0);
  CHECK(e.reason() ==
        "rank 0: all_reduce 'refused' (1 i64) could not be queued on stream 'refusing': stream "
        "'refusing' takes no work");
}

namespace {

// The buffers of two all_to_all_v, one element from each rank to each rank: element `to` of
// rank `from`'s send holds 1000 * exchange + 10 * from + to. An abort gives the collectives up:
// MPI may still write the buffers until the process ends.
struct Exchanges {
  std::vector<std::int64_t> send[2], recv[2];
  std::vector<std::size_t> ones;
};
Exchanges& lasting_exchanges(int me, int n) {
  static std::vector<std::unique_ptr<Exchanges>> all;  // freed after MPI_Finalize
  Exchanges& x = *all.emplace_back(std::make_unique<Exchanges>());
  x.ones.assign(static_cast<std::size_t>(n), 1);
  for (int exchange = 0; exchange < 2; ++exchange) {
    for (int to = 0; to < n; ++to) x.send[exchange].push_back(1000 * (exchange + 1) + 10 * me + to);
    x.recv[exchange].assign(static_cast<std::size_t>(n), -1);
  }
  return x;
}

// Rank 0's all_to_all_v 'first' fails as it starts (its when_started calls `planted`, which
// throws), the other ranks' start; then every rank calls all_to_all_v 'second'. Rank 0 skipped
// its part of 'first': its 'second' must not pair with the peers' 'first'. Every operation fails
// instead — rank 0's 'first' with its own error (`says` in it), everything else with
// CommAborted naming rank 0 — and no buffer receives the other exchange's elements.
void fail_to_start_on_rank_0(const std::function<void()>& planted, const std::string& says) {
  auto world = swp::MpiCommunicator::world();
  world->set_timeout(20s);  // only without the abort would anything wait for it
  const int me = world->rank();
  const int n = world->size();
  if (n < 2) return;
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  Exchanges& x = lasting_exchanges(me, n);
  const std::span<const std::size_t> ones(x.ones);
  auto first = world->all_to_all_v(
      s,
      [&, me]() -> swp::AllToAllVBuffers {
        if (me == 0) planted();
        return {x.send[0].data(), x.ones, x.recv[0].data(), x.ones};
      },
      swp::DataType::i64, "first");
  auto second = world->all_to_all_v(s, std::span<const std::int64_t>(x.send[1]), ones,
                                    std::span<std::int64_t>(x.recv[1]), ones, "second");
  CHECK_NOTHROW(s.synchronize());
  REQUIRE(first.ready());
  REQUIRE(second.ready());
  if (me == 0) {
    try {
      first.get();
      FAIL("rank 0's first all_to_all_v did not fail");
    } catch (const swp::CommAborted& e) {
      FAIL("rank 0's own error became CommAborted: " << e.what());
    } catch (const swp::CommError& e) {
      CHECK(e.rank() == 0);
      CHECK(e.op() == "all_to_all_v");
      CHECK(std::string(e.what()) ==
            "rank 0: all_to_all_v 'first' (i64) failed as it started: " + says);
    }
  } else {
    const swp::CommAborted e = aborted_error(first);
    CHECK(e.rank() == me);
    CHECK(e.aborting_rank() == 0);
    CHECK(e.reason() == "rank 0: all_to_all_v 'first' (i64) failed as it started: " + says);
  }
  CHECK(aborted_error(second).aborting_rank() == 0);
  CHECK(world->aborted());
  for (int exchange = 0; exchange < 2; ++exchange)
    for (int from = 0; from < n; ++from) {
      const std::int64_t got = x.recv[exchange][static_cast<std::size_t>(from)];
      CAPTURE(exchange);
      CAPTURE(from);
      CHECK((got == -1 || got == 1000 * (exchange + 1) + 10 * from + me));
    }
}

}  // namespace

TEST_CASE("mpi: an all_to_all_v failing as it starts on one rank aborts every rank's operations") {
  fail_to_start_on_rank_0([] { throw std::runtime_error("planted capacity error"); },
                          "planted capacity error");
}

TEST_CASE("mpi: an all_to_all_v whose when_started throws a non-std exception fails, and aborts") {
  fail_to_start_on_rank_0([] { throw 42; },
                          "it threw an exception not derived from std::exception");
}

}  // namespace test_mpi_abort
