#include "swp/async/sequencer.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/started.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/sync_wait.hpp"

namespace {

using namespace std::chrono_literals;

using swp::test::Started;  // the sequencer resumes its waiters inline (no Resumer)

swp::Co<void> take_turn(swp::SubmissionSequencer& seq, std::uint64_t n,
                        std::vector<std::uint64_t>& order) {
  co_await seq.turn(n, "task " + std::to_string(n));
  order.push_back(n);
  seq.advance();
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
