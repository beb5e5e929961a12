#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/engine/detail/lane_claim.hpp"

namespace test_lane_claim {  // each test file's names apart (unity builds)

using namespace std::chrono_literals;
using swp::detail::InstanceArray;
using swp::detail::InstanceState;
using swp::detail::IterationSync;
using swp::detail::LaneClaim;
using swp::detail::LaneClaims;

// Another user of the lane: a job that logs that it ran.
struct OtherJob final : swp::Lane::Job {
  int runs = 0;
  void start(swp::Lane& lane) noexcept override {
    ++runs;
    lane.finish_job();
  }
};

// One task alone on its lane (on virtual time), with one sync entry: what the core would make
// for it.
struct ClaimedTask {
  ClaimedTask() : entries(1) {
    entries[0].instances = InstanceArray(1);
    swp::detail::Instance& made = entries[0].instances.emplace();
    made.sync = &entries[0];
    made.info = &info;
    info.lane = &lane;
    info.claim = &claims.add(entries, 0, lane);
  }
  [[nodiscard]] swp::detail::Instance& in() const { return entries[0].instances[0]; }
  [[nodiscard]] LaneClaim& claim() const { return *info.claim; }
  // The instance's next iteration (its entry serves it): idle there until released.
  void next_iteration() { ++entries[0].iter; }
  // Runs the lane's queued work; true once `other` ran (within a second of virtual time).
  bool ran(const OtherJob& other) {
    return sim.drive_until([&] { return other.runs == 1; }, sim.now() + 1s);
  }

  swp::SimScheduler sim;
  swp::Lane lane{sim, "alone"};
  std::vector<IterationSync> entries;
  swp::detail::TaskInfo info;
  LaneClaims claims;
};

// Claims need heavy fences (membarrier); a machine without them claims nothing.
bool claims_work() {
  if (swp::detail::asymmetric_fences_available()) return true;
  MESSAGE("skipped: no heavy fences (membarrier) here, lanes cannot be claimed");
  return false;
}

TEST_CASE("a claimed task's instances bypass the lane until another submitter revokes it") {
  if (!claims_work()) return;
  ClaimedTask task;
  swp::Lane& lane = task.lane;
  task.claims.take_all();
  CHECK(task.claim().bypassing.load());
  CHECK(lane.claimed_by(task.claim()));

  // Released under the claim: it holds the lane (a revoker would wait for its finish).
  REQUIRE(swp::detail::release_under_claim(task.in()));
  CHECK(task.in().state_in(0) == InstanceState::queued);
  CHECK(task.claim().holds_lane());
  task.in().set_state(InstanceState::finished);
  swp::detail::finish_under_claim(task.in());
  CHECK_FALSE(task.claim().holds_lane());
  CHECK(lane.claim_holds(task.claim()));  // nobody else came: the claim stands

  // Another submitter while the next instance holds the lane: the claim is revoked, not
  // ended; the other job waits for that instance's finish, which ends the claim.
  task.next_iteration();
  REQUIRE(swp::detail::release_under_claim(task.in()));
  OtherJob other;
  lane.submit(other);
  CHECK_FALSE(lane.claim_holds(task.claim()));
  CHECK(lane.claimed_by(task.claim()));
  CHECK_FALSE(task.sim.drive_until([] { return false; }, task.sim.now() + 1s));
  CHECK(other.runs == 0);
  task.in().set_state(InstanceState::finished);
  swp::detail::finish_under_claim(task.in());
  CHECK_FALSE(task.claim().bypassing.load());
  CHECK_FALSE(lane.claimed_by(task.claim()));
  REQUIRE(task.ran(other));

  // From then on the task's instances go through the lane.
  task.next_iteration();
  CHECK_FALSE(swp::detail::release_under_claim(task.in()));
  CHECK(task.in().state_in(2) == InstanceState::queued);
  CHECK_FALSE(task.in().bypassed.load());
  CHECK_FALSE(task.claim().holds_lane());
}

TEST_CASE("a release that finds its claim revoked gives it up and goes through the lane") {
  if (!claims_work()) return;
  ClaimedTask task;
  swp::Lane& lane = task.lane;
  task.claims.take_all();
  // Another submitter between two instances: nothing holds the lane, the claim ends at once,
  // and the other job runs.
  OtherJob other;
  lane.submit(other);
  CHECK_FALSE(lane.claimed_by(task.claim()));
  REQUIRE(task.ran(other));
  // The task's next release still saw the claim taken (bypassing): it looks, finds it revoked,
  // gives it up, and does not bypass the lane.
  CHECK(task.claim().bypassing.load());
  CHECK_FALSE(swp::detail::release_under_claim(task.in()));
  CHECK_FALSE(task.claim().bypassing.load());
  CHECK_FALSE(task.in().bypassed.load());
  CHECK_FALSE(task.claim().holds_lane());
}

TEST_CASE("the claims are taken afresh for each run and ended with it") {
  if (!claims_work()) return;
  ClaimedTask task;
  swp::Lane& lane = task.lane;
  task.claims.take_all();
  REQUIRE(lane.claimed_by(task.claim()));
  task.claims.end_all();
  CHECK_FALSE(task.claim().bypassing.load());
  CHECK_FALSE(lane.claimed_by(task.claim()));
  CHECK(lane.idle());

  // A lane in use by someone else cannot be claimed: the run's instances go through it.
  OtherJob other;
  lane.submit(other);
  task.claims.take_all();
  CHECK_FALSE(task.claim().bypassing.load());
  CHECK_FALSE(swp::detail::release_under_claim(task.in()));
  REQUIRE(task.ran(other));
  // The next run finds the lane free again.
  task.claims.take_all();
  CHECK(task.claim().bypassing.load());
  task.claims.end_all();
  CHECK(lane.idle());
}

}  // namespace test_lane_claim
