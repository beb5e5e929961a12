// The MPI communicator across processes: run by mpirun with 2 and 4 ranks (tools/mpi-tests.sh;
// `meson test` runs them too). Every rank runs every test case in the same order; results are
// checked against what a serial computation gives on every rank.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_communicator {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

// The operation's future, once the stream ran everything queued so far.
void finish(swp::Stream& stream, const swp::Future<void>& done) {
  stream.synchronize();
  REQUIRE(done.ready());
  done.get();
}

}  // namespace

TEST_CASE("mpi: all_reduce sums, takes the maximum, in every rank's buffer") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  const auto me = static_cast<std::int64_t>(world->rank());
  std::vector<std::int64_t> mine(1000), sum(1000);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = me * 1000 + static_cast<std::int64_t>(i);
  finish(s, world->all_reduce(s, std::span<const std::int64_t>(mine), std::span<std::int64_t>(sum),
                              swp::ReduceOp::sum, "sum"));
  for (std::size_t i = 0; i < sum.size(); ++i) {
    const auto k = static_cast<std::int64_t>(i);
    std::int64_t expected = 0;
    for (std::int64_t r = 0; r < n; ++r) expected += r * 1000 + k;
    REQUIRE(sum[i] == expected);
  }
  std::vector<double> value{static_cast<double>(me) + 0.5}, biggest(1);
  finish(s, world->all_reduce(s, std::span<const double>(value), std::span<double>(biggest),
                              swp::ReduceOp::max));
  CHECK(biggest[0] == n - 1 + 0.5);
}

TEST_CASE("mpi: all_gather puts every rank's block in rank order") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  std::vector<std::int32_t> mine{world->rank(), world->rank() * 10};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(n));
  finish(s,
         world->all_gather(s, std::span<const std::int32_t>(mine), std::span<std::int32_t>(all)));
  for (int r = 0; r < n; ++r) {
    CHECK(all[2 * static_cast<std::size_t>(r)] == r);
    CHECK(all[2 * static_cast<std::size_t>(r) + 1] == r * 10);
  }
  std::vector<std::int32_t> wrong(3);
  CHECK_THROWS_AS(
      world->all_gather(s, std::span<const std::int32_t>(mine), std::span<std::int32_t>(wrong)),
      std::invalid_argument);
}

TEST_CASE("mpi: all_to_all sends block r to rank r") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  const int me = world->rank();
  constexpr int block = 3;
  std::vector<float> send(static_cast<std::size_t>(n * block)), recv(send.size());
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < block; ++k)
      send[static_cast<std::size_t>(r * block + k)] = static_cast<float>(me * 100 + r * 10 + k);
  finish(s, world->all_to_all(s, std::span<const float>(send), std::span<float>(recv)));
  for (int from = 0; from < n; ++from)
    for (int k = 0; k < block; ++k)
      CHECK(recv[static_cast<std::size_t>(from * block + k)] ==
            static_cast<float>(from * 100 + me * 10 + k));
}

TEST_CASE("mpi: all_to_all_v exchanges blocks of per-pair sizes") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  const int me = world->rank();
  // Rank s sends (s + r) % 3 + 1 elements to rank r, each s * 1000 + r * 10 + k.
  const auto count = [](int from, int to) { return static_cast<std::size_t>((from + to) % 3 + 1); };
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<std::int64_t> send;
  for (int r = 0; r < n; ++r) {
    send_counts.push_back(count(me, r));
    recv_counts.push_back(count(r, me));
    for (std::size_t k = 0; k < count(me, r); ++k)
      send.push_back(me * 1000 + r * 10 + static_cast<std::int64_t>(k));
  }
  std::vector<std::int64_t> recv(std::accumulate(recv_counts.begin(), recv_counts.end(), 0UL));
  finish(s, world->all_to_all_v(s, std::span<const std::int64_t>(send), send_counts,
                                std::span<std::int64_t>(recv), recv_counts, "splits"));
  std::size_t at = 0;
  for (int from = 0; from < n; ++from)
    for (std::size_t k = 0; k < count(from, me); ++k, ++at)
      CHECK(recv[at] == from * 1000 + me * 10 + static_cast<std::int64_t>(k));
}

TEST_CASE("mpi: send and recv pass a value around the ring, awaited from a coroutine") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& out = rt.stream("send");
  swp::Stream& in = rt.stream("recv");
  const int n = world->size();
  const int me = world->rank();
  std::vector<std::int32_t> token{me * 7}, got(1, -1);
  auto received = world->recv(in, std::span<std::int32_t>(got), (me + n - 1) % n, "ring");
  auto sent = world->send(out, std::span<const std::int32_t>(token), (me + 1) % n, "ring");
  swp::sync_wait([](swp::Future<void> a, swp::Future<void> b) -> swp::Co<void> {
    co_await a;
    co_await b;
  }(received, sent));
  CHECK(got[0] == ((me + n - 1) % n) * 7);
  CHECK_THROWS_AS(world->send(out, std::span<const std::int32_t>(token), n), std::invalid_argument);
}

TEST_CASE("mpi: operations on one stream run in its order; later work sees the result") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& s = rt.stream("comm");
  const int n = world->size();
  std::vector<std::int64_t> one{1}, count(1), doubled(1);
  auto first = world->all_reduce(s, std::span<const std::int64_t>(one),
                                 std::span<std::int64_t>(count), swp::ReduceOp::sum);
  // Reads `count` when the stream gets there: after the first all_reduce completed.
  auto second = world->all_reduce(s, std::span<const std::int64_t>(count),
                                  std::span<std::int64_t>(doubled), swp::ReduceOp::sum);
  std::int64_t seen = -1;
  s.enqueue([&] { seen = doubled[0]; });
  finish(s, second);
  first.get();
  CHECK(count[0] == n);
  CHECK(seen == static_cast<std::int64_t>(n) * n);
}

TEST_CASE("mpi: operations start in the order they were called, whichever streams they are on") {
  auto world = swp::MpiCommunicator::world();
  swp::Runtime rt;
  swp::Stream& first = rt.stream("first");
  swp::Stream& second = rt.stream("second");
  const int n = world->size();
  const int me = world->rank();
  // Every rank calls X (on `first`) before Y (on `second`). On rank 0, `first` is busy for a
  // while with earlier work, so `second` gets to Y before `first` gets to X: started in stream
  // order, rank 0's Y would meet the other ranks' X (the sums would swap).
  if (me == 0) first.enqueue([] { std::this_thread::sleep_for(100ms); });
  std::vector<std::int64_t> x{1}, y{1000}, x_sum(1), y_sum(1);
  auto xd = world->all_reduce(first, std::span<const std::int64_t>(x),
                              std::span<std::int64_t>(x_sum), swp::ReduceOp::sum, "X");
  auto yd = world->all_reduce(second, std::span<const std::int64_t>(y),
                              std::span<std::int64_t>(y_sum), swp::ReduceOp::sum, "Y");
  finish(second, yd);
  finish(first, xd);
  CHECK(x_sum[0] == n);
  CHECK(y_sum[0] == 1000 * n);
}

namespace {

// A stream that passes its work on to `inner`, holding its first enqueue until a second one
// comes (or `hold` passed): the thread whose call queues first reaches the queue last, unless
// the communicator keeps a call's place in the call order and its place in the queue together.
class GatedStream final : public swp::Stream {
 public:
  GatedStream(swp::Stream& inner, std::chrono::milliseconds hold)
      : swp::Stream("gated"), inner_(inner), hold_(hold) {}
  using swp::Stream::wait;
  void enqueue_work(swp::Clock::duration d, swp::WorkTag tag) override {
    inner_.enqueue_work(d, tag);
  }
  void enqueue(std::function<void()> work, swp::Clock::duration modelled,
               swp::WorkTag tag) override {
    {
      std::unique_lock lock(mutex_);
      const bool first = ++enqueues_ == 1;
      changed_.notify_all();
      if (first) changed_.wait_for(lock, hold_, [&] { return enqueues_ > 1; });
    }
    inner_.enqueue(std::move(work), modelled, tag);
  }
  std::uint64_t record(swp::Event& event) override { return inner_.record(event); }
  void wait(const swp::Event& event, std::uint64_t generation) override {
    inner_.wait(event, generation);
  }
  void synchronize() override { inner_.synchronize(); }
  void enqueue_fault(std::string what) override { inner_.enqueue_fault(std::move(what)); }

  // Waits (up to 20 s) until the first enqueue came; whether it did.
  bool first_came() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 20s, [&] { return enqueues_ > 0; });
  }

 private:
  swp::Stream& inner_;
  const std::chrono::milliseconds hold_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int enqueues_ = 0;
};

}  // namespace

TEST_CASE("mpi: two threads calling on one stream queue their operations in the call order") {
  auto world = swp::MpiCommunicator::world();
  world->set_timeout(20s);  // only an operation queued behind a later one waits for it
  swp::Runtime rt;
  GatedStream s(rt.stream("comm"), 2s);
  const int n = world->size();
  // Every rank calls X, then Y, from two threads on one stream; X's thread is held between
  // taking its place in the call order and reaching the stream's queue while Y is called.
  std::vector<std::int64_t> x{1}, y{1000}, x_sum(1), y_sum(1);
  swp::Future<void> xd;
  std::thread caller([&] {
    xd = world->all_reduce(s, std::span<const std::int64_t>(x), std::span<std::int64_t>(x_sum),
                           swp::ReduceOp::sum, "X");
  });
  REQUIRE(s.first_came());
  auto yd = world->all_reduce(s, std::span<const std::int64_t>(y), std::span<std::int64_t>(y_sum),
                              swp::ReduceOp::sum, "Y");
  caller.join();
  finish(s, yd);
  finish(s, xd);
  CHECK(x_sum[0] == n);
  CHECK(y_sum[0] == 1000 * n);
}

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
    auto receive = world->recv(rt.stream("recv"), std::span<std::int64_t>(&b.received, 1),
                               aborting, "never sent");
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

namespace {

// Rank `victim`'s coroutine (run by sync_wait on a thread of its own: no resumer, so it resumes
// on whichever thread completes what it awaits) owns a process group of `world` and awaits a
// receive on `world` that nobody sends, queued behind a busy stream item that lets it run only
// once it failed: the abort alone completes it, from inside its listener call on the aborting
// thread, where the resumed coroutine destroys the group (~MpiCommunicator unlistens from the
// abort state the group shares with its world). `abort` aborts the world (on `victim`'s main
// thread, or on a peer); the coroutine must end within the deadline.
void resumed_coroutine_destroys_group(
    swp::MpiCommunicator& world, int victim,
    const std::function<void(const std::function<void()>&)>& abort) {
  const int me = world.rank();
  std::vector<int> all(static_cast<std::size_t>(world.size()));
  std::iota(all.begin(), all.end(), 0);
  std::unique_ptr<swp::Communicator> group = world.split(all);  // aborts with its world
  swp::Runtime rt;
  swp::Stream& busy = rt.stream("busy");
  static std::vector<std::unique_ptr<std::int64_t>> received;  // MPI may write it until the end
  std::int64_t& buffer = *received.emplace_back(std::make_unique<std::int64_t>(0));
  std::atomic<bool> called{false};
  std::atomic<bool> ended{false};
  std::atomic<bool> group_gone{false};
  swp::Future<void> pending;
  std::thread runner;
  if (me == victim) {
    busy.enqueue([&] {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (!(called && pending.ready()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    });
    runner = std::thread([&] {
      swp::sync_wait([](swp::MpiCommunicator& w, std::unique_ptr<swp::Communicator> g,
                        swp::Stream& stream, std::int64_t& into, swp::Future<void>& op,
                        std::atomic<bool>& op_called, std::atomic<bool>& gone) -> swp::Co<void> {
        op = w.recv(stream, std::span<std::int64_t>(&into, 1), w.rank(), "never sent");
        op_called = true;
        try {
          co_await op;
        } catch (const swp::CommAborted&) {
        }
        g.reset();  // on the aborting thread, inside the abort's listener call
        gone = true;
      }(world, std::move(group), busy, buffer, pending, called, group_gone));
      ended = true;
    });
  }
  abort([&] {
    while (!called) std::this_thread::yield();  // the victim's receive is in the call order
  });
  if (me != victim) return;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!ended && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  if (!ended) {
    // Deadlocked (the abort's thread waits for itself): nothing could end this process cleanly.
    std::fprintf(stderr, "rank %d: the coroutine resumed by the abort never ended (deadlock)\n",
                 me);
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  CHECK(group_gone);
  CHECK(world.aborted());
  busy.synchronize();
}

}  // namespace

TEST_CASE("mpi: a coroutine resumed by its own rank's abort may destroy a group of that world") {
  auto world = swp::MpiCommunicator::world();
  std::thread aborter;
  // Every rank is its own victim (a peer's abort message may tell it first: then the
  // coroutine resumes on the abort channel's thread). The abort runs on a thread of its own,
  // which the victim's deadline outlives.
  resumed_coroutine_destroys_group(
      *world, world->rank(), [&](const std::function<void()>& wait_for_call) {
        wait_for_call();
        aborter = std::thread([&] { world->abort("planted failure"); });
      });
  aborter.join();
}

TEST_CASE("mpi: a coroutine resumed by a peer's abort may destroy a group of that world") {
  auto world = swp::MpiCommunicator::world();
  auto control = swp::MpiCommunicator::world();  // tells rank 1 that rank 0 called
  const int me = world->rank();
  if (world->size() < 2) return;
  swp::Runtime rt;
  swp::Stream& c = rt.stream("control");
  resumed_coroutine_destroys_group(*world, 0, [&](const std::function<void()>& wait_for_call) {
    std::int32_t token = 0;
    if (me == 0) {
      wait_for_call();
      finish(c, control->send(c, std::span<const std::int32_t>(&token, 1), 1));
    } else if (me == 1) {
      finish(c, control->recv(c, std::span<std::int32_t>(&token, 1), 0));
      world->abort("planted failure");  // reaches rank 0's abort channel thread
    }
  });
}

TEST_CASE("mpi: a coroutine resumed by a peer's abort may destroy the last communicator of it") {
  auto control = swp::MpiCommunicator::world();  // tells rank 1 that rank 0 called
  auto world = swp::MpiCommunicator::world();
  const int me = world->rank();
  if (world->size() < 2) return;
  swp::Runtime rt;
  swp::Stream& c = rt.stream("control");
  swp::Stream& busy = rt.stream("busy");
  static std::vector<std::unique_ptr<std::int64_t>> received;  // MPI may write it until the end
  std::int64_t& buffer = *received.emplace_back(std::make_unique<std::int64_t>(0));
  std::int32_t token = 0;
  if (me == 1) {
    finish(c, control->recv(c, std::span<std::int32_t>(&token, 1), 0));
    world->abort("planted failure");  // reaches rank 0's abort channel thread
  }
  if (me != 0) return;
  // Rank 0's receive fails by the abort's listener, on the abort channel's thread (its stream
  // gets to it only after that); the coroutine resumed there waits for the stream, as a
  // communicator's operations must end before it goes, then destroys the world's only
  // communicator: its abort channel, whose thread this is.
  std::atomic<bool> called{false};
  std::atomic<bool> ended{false};
  std::atomic<bool> world_gone{false};
  swp::Future<void> pending;
  busy.enqueue([&] {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!(called && pending.ready()) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
  });
  std::thread runner([&] {
    swp::sync_wait([](std::unique_ptr<swp::MpiCommunicator> w, swp::Stream& stream,
                      std::int64_t& into, swp::Future<void>& op, std::atomic<bool>& op_called,
                      std::atomic<bool>& gone) -> swp::Co<void> {
      op = w->recv(stream, std::span<std::int64_t>(&into, 1), w->rank(), "never sent");
      op_called = true;
      try {
        co_await op;
      } catch (const swp::CommAborted&) {
      }
      stream.synchronize();  // the receive's run gave it up
      w.reset();             // on the abort channel's thread, inside the abort's listener call
      gone = true;
    }(std::move(world), busy, buffer, pending, called, world_gone));
    ended = true;
  });
  while (!called) std::this_thread::yield();  // the receive is in the call order
  finish(c, control->send(c, std::span<const std::int32_t>(&token, 1), 1));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!ended && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  if (!ended) {
    std::fprintf(stderr, "rank 0: the coroutine resumed by the abort never ended (deadlock)\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  CHECK(world_gone);
  busy.synchronize();
}

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
            swp::Future<void> reduced = comm.all_reduce(
                scope.stream(), std::span<const std::int64_t>(&in[i], 1),
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

}  // namespace test_mpi_communicator

int main(int argc, char** argv) {
  swp::MpiSession mpi(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
