// What a coroutine resumed by an abort may do on MPI (run by mpirun with 2 and 4 ranks, every
// rank runs every case in the same order): resumed from inside the abort's listener call, on
// the aborting thread, it may destroy a process group of the aborted world, or its last
// communicator.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <thread>
#include <vector>

#include "mpi_finish.hpp"
#include "swp/async/co.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/runtime.hpp"

namespace test_mpi_abort_resume {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::test::finish;

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

}  // namespace test_mpi_abort_resume
