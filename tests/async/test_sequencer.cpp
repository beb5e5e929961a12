#include "swp/async/sequencer.hpp"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/started.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/sync_wait.hpp"

namespace test_sequencer {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

using swp::test::Started;  // the sequencer resumes its waiters inline (no Resumer)

swp::Co<void> take_turn(swp::SubmissionSequencer& seq, std::uint64_t n,
                        std::vector<std::uint64_t>& order) {
  co_await seq.turn(n, "task " + std::to_string(n));
  order.push_back(n);
  seq.advance();
}

// Takes turns first, first + stride, ... for `rounds` rounds, named lazily "lane (iter r)".
swp::Co<void> take_turns(swp::SubmissionSequencer& seq, std::uint64_t first, std::uint64_t stride,
                         int rounds, int& taken) {
  for (int r = 0; r < rounds; ++r) {
    co_await seq.turn(first + static_cast<std::uint64_t>(r) * stride, "lane", r);
    ++taken;
    seq.advance();
  }
}

// Lets `d` of virtual time pass.
void let_time_pass(swp::SimScheduler& sim, swp::Clock::duration d) {
  struct Tick final : swp::Runnable {
    void run() noexcept override {}
  } tick;
  const auto until = sim.now() + d;
  sim.post_at(until, tick);
  sim.drive_until([] { return false; }, until);
}

}  // namespace

TEST_CASE("turns are taken in sequence order whatever order the waiters arrive in") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  std::vector<std::uint64_t> order;
  std::vector<std::unique_ptr<Started>> waiters;
  for (std::uint64_t n : {3, 1, 4, 2, 0}) waiters.push_back(std::make_unique<Started>(take_turn(seq, n, order)));
  CHECK(order == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
  CHECK(seq.next() == 5);
  CHECK(seq.waiting() == 0);
  for (auto& w : waiters) CHECK(w->finished);
}

TEST_CASE("a waiter whose turn never comes times out with an error naming it") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  std::vector<std::uint64_t> order;
  Started stuck(take_turn(seq, 2, order));  // turns 0 and 1 never happen
  CHECK_FALSE(stuck.finished);
  CHECK(seq.check_timeouts(30s) == 0);  // no virtual time has passed yet
  struct Tick final : swp::Runnable {
    void run() noexcept override {}
  } tick;
  sim.post_at(sim.now() + 31s, tick);
  sim.drive_until([] { return false; }, sim.now() + 1min);
  CHECK(seq.check_timeouts(30s) == 1);
  REQUIRE(stuck.finished);
  REQUIRE(stuck.error);
  try {
    std::rethrow_exception(stuck.error);
  } catch (const swp::SequencerTimeout& e) {
    const std::string what = e.what();
    CHECK(what.find("task 2") != std::string::npos);
    CHECK(what.find("turn 2") != std::string::npos);
    CHECK(what.find("stuck at turn 0") != std::string::npos);
  }
}

TEST_CASE("cancel wakes every waiter with the cancellation error") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  std::vector<std::uint64_t> order;
  Started a(take_turn(seq, 5, order)), b(take_turn(seq, 7, order));
  seq.cancel(std::make_exception_ptr(std::runtime_error("pipeline cancelled")));
  CHECK(a.finished);
  CHECK(b.finished);
  CHECK(a.error);
  CHECK(b.error);
  CHECK(order.empty());
}

TEST_CASE("a waiter whose stop signal fires leaves the queue with Cancelled") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  swp::StopSignal stop;
  std::vector<std::uint64_t> order;
  Started waiter(take_turn(seq, 3, order), &stop);
  CHECK(seq.waiting() == 1);
  stop.request_stop("drain");
  CHECK(waiter.finished);
  CHECK(waiter.cancelled_reason() == "drain");
  CHECK(seq.waiting() == 0);
}

TEST_CASE("a coroutine destroyed while it waits for its turn is unlinked: advance skips it") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  swp::StopSignal stop;
  std::vector<std::uint64_t> order;
  Started stays(take_turn(seq, 2, order));
  {
    Started gone(take_turn(seq, 1, order), &stop);
    CHECK(seq.waiting() == 2);
  }  // its frame freed while it waits for turn 1
  CHECK(seq.waiting() == 1);
  stop.request_stop("after the frame is gone");  // its callback went with it
  seq.advance();                                 // turn 1: used to resume the freed frame
  CHECK_FALSE(stays.finished);
  seq.advance();  // turn 2
  CHECK(stays.finished);
  CHECK(order == std::vector<std::uint64_t>{2});
  CHECK(seq.waiting() == 0);
}

TEST_CASE("a wait is timed from the first check that saw it parked, and named only for its error") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  int taken = 0;
  Started stuck(take_turns(seq, 2, 1, 1, taken));  // turns 0 and 1 never happen
  let_time_pass(sim, 31s);
  CHECK(seq.check_timeouts(30s) == 0);  // parking read no clock: its wait starts now
  let_time_pass(sim, 29s);
  CHECK(seq.check_timeouts(30s) == 0);
  let_time_pass(sim, 2s);
  CHECK(seq.check_timeouts(30s) == 1);
  REQUIRE(stuck.finished);
  CHECK(taken == 0);
  REQUIRE(stuck.error);
  try {
    std::rethrow_exception(stuck.error);
  } catch (const swp::SequencerTimeout& e) {
    CHECK(std::string(e.what()) ==
          "lane (iter 0) waited 31000 ms for submission turn 2, but the sequencer is stuck at "
          "turn 0 (the holder of that turn never submitted)");
  }
}

TEST_CASE("turns taken out of order by parked waiters allocate nothing after warm-up") {
  swp::SimScheduler sim;
  swp::SubmissionSequencer seq(sim);
  // Three lanes and a driver take turns round by round: the driver holds turn r * 4 and lane k
  // turn r * 4 + k + 1. The driver passing its turn resumes lane 0 inline, whose advance
  // resumes lane 1, and so on; each lane then parks on its turn of the next round, the last
  // first, so every park inserts ahead of the parked ones.
  constexpr std::uint64_t lanes = 3;
  constexpr std::uint64_t stride = lanes + 1;
  constexpr int rounds = 200;
  constexpr int warm_up = 2;
  std::array<int, lanes> taken{};
  std::vector<std::unique_ptr<Started>> waiters;
  for (std::uint64_t k = lanes; k-- > 0;)
    waiters.push_back(std::make_unique<Started>(take_turns(seq, k + 1, stride, rounds, taken[k])));
  REQUIRE(seq.waiting() == lanes);
  // One round: a check first (it stamps or compares every parked waiter), then the driver's
  // turn passes. True when the round ended as it should.
  auto round = [&](int r) {
    const bool expired = seq.check_timeouts(30s) != 0;
    seq.advance();
    const bool last = r + 1 == rounds;
    return !expired && seq.next() == stride * static_cast<std::uint64_t>(r + 1) &&
           seq.waiting() == (last ? 0 : lanes);
  };
  for (int r = 0; r < warm_up; ++r) REQUIRE(round(r));
  std::size_t allocations = 0;
  bool rounds_ok = true;
  {
    swp::test::AllocationCount count;
    for (int r = warm_up; r < rounds; ++r) rounds_ok = round(r) && rounds_ok;
    allocations = count.stop();
  }
  CHECK(rounds_ok);
  CHECK(allocations == 0);
  for (std::uint64_t k = 0; k < lanes; ++k) {
    CHECK(taken[k] == rounds);
    CHECK(waiters[k]->finished);
  }
}

}  // namespace test_sequencer
