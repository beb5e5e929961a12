// The MPI communicator across processes: run by mpirun with 2 and 4 ranks (tools/mpi-tests.sh;
// `meson test` runs them too). Every rank runs every test case in the same order; results are
// checked against what a serial computation gives on every rank. This file: the collectives and
// point to point operations, and the order they run in (its stream's, the call order); the
// swp-mpi-tests executable's main (an MpiSession around doctest) is here too.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/async/co.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_communicator {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

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

}  // namespace test_mpi_communicator

int main(int argc, char** argv) {
  swp::MpiSession mpi(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
