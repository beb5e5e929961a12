#include "swp/async/lane.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/thread_pool_scheduler.hpp"

namespace test_lane {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

// Starts a job's coroutine on `lane`, which the job finishes when the coroutine ends.
void start_job(swp::Co<void>& co, swp::Lane& lane) {
  co.start(
      &lane,
      [](void* context, std::exception_ptr&) noexcept {
        static_cast<swp::Lane*>(context)->finish_job();
      },
      &lane);
}

// A job that runs a coroutine on its lane: it logs "start i", awaits `gate`, logs "end i".
struct GatedJob final : swp::Lane::Job {
  int id = 0;
  swp::Future<> gate;
  std::mutex* log_mutex = nullptr;
  std::vector<int>* log = nullptr;
  std::atomic<int>* active = nullptr;
  std::atomic<int>* max_active = nullptr;
  swp::Co<void> co;

  void record(int value) {
    std::lock_guard lock(*log_mutex);
    log->push_back(value);
  }

  swp::Co<void> body() {
    const int now_active = active->fetch_add(1) + 1;
    int seen = max_active->load();
    while (now_active > seen && !max_active->compare_exchange_weak(seen, now_active)) {}
    record(id);
    if (gate.valid()) co_await gate;
    record(-id);
    active->fetch_sub(1);
  }

  void start(swp::Lane& lane) noexcept override {
    co = body();
    start_job(co, lane);
  }
};

// What GatedJobs share: the log and the count of jobs active at once.
struct GatedLog {
  std::mutex mutex;
  std::vector<int> log;
  std::atomic<int> active{0}, max_active{0};

  // `n` jobs with ids 1..n that log here (no gates yet).
  std::vector<GatedJob> jobs(int n) {
    std::vector<GatedJob> job(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      job[i].id = i + 1;
      job[i].log_mutex = &mutex;
      job[i].log = &log;
      job[i].active = &active;
      job[i].max_active = &max_active;
    }
    return job;
  }
};

}  // namespace

TEST_CASE("a lane runs jobs one at a time in submission order, across suspensions") {
  swp::ThreadPoolScheduler pool(2);
  swp::Lane lane(pool, "compute");
  GatedLog shared;
  const std::vector<int>& log = shared.log;

  constexpr int jobs = 50;
  std::vector<swp::Promise<>> gates(jobs);
  std::vector<GatedJob> job = shared.jobs(jobs);
  for (int i = 0; i < jobs; ++i) {
    job[i].gate = gates[i].get_future();
    lane.submit(job[i]);
  }
  // Open the gates in reverse: a lane that ran the next job while one waits would now finish
  // the jobs out of order.
  for (int i = jobs - 1; i >= 0; --i) gates[i].set_value();
  const bool done = pool.drive_until([&] { return lane.idle(); }, swp::Clock::now() + 10s);
  REQUIRE(done);

  std::vector<int> expected;
  for (int i = 1; i <= jobs; ++i) {
    expected.push_back(i);
    expected.push_back(-i);
  }
  CHECK(log == expected);
  CHECK(shared.max_active.load() == 1);
}

TEST_CASE("a job submitted to an idle lane starts first; jobs submitted before it started follow") {
  // The idle lane takes its first job without its queue: the ones submitted meanwhile must
  // still queue behind it, and the lane must count as busy from the submission on.
  swp::SimScheduler sim;
  swp::Lane lane(sim, "handoff");
  GatedLog shared;
  const std::vector<int>& log = shared.log;
  std::vector<GatedJob> job = shared.jobs(4);
  lane.submit(job[0]);
  CHECK_FALSE(lane.idle());
  CHECK(lane.activity() == swp::Lane::Activity::idle);  // handed over, not started
  lane.submit(job[1]);
  lane.submit(job[2]);
  REQUIRE(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(log == std::vector<int>{1, -1, 2, -2, 3, -3});
  // Idle again: the next job is handed over the same way.
  lane.submit(job[3]);
  CHECK_FALSE(lane.idle());
  REQUIRE(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(log == std::vector<int>{1, -1, 2, -2, 3, -3, 4, -4});
  CHECK(shared.max_active.load() == 1);
}

TEST_CASE("lanes on one scheduler run side by side and each keeps its own order") {
  swp::SimScheduler sim;
  swp::Lane a(sim, "a"), b(sim, "b");
  GatedLog shared;
  const std::vector<int>& log = shared.log;
  swp::Promise<> gate_a;
  std::vector<GatedJob> job = shared.jobs(2);
  job[0].gate = gate_a.get_future();
  a.submit(job[0]);
  b.submit(job[1]);
  // Lane a is stuck on its gate; lane b must still finish its job.
  CHECK(sim.drive_until([&] { return b.idle(); }, sim.now() + 1s));
  CHECK_FALSE(a.idle());
  gate_a.set_value();
  CHECK(sim.drive_until([&] { return a.idle(); }, sim.now() + 1s));
  CHECK(log == std::vector<int>{1, 2, -2, -1});
}

namespace {

// A job whose coroutine notes the lane's activity while it runs, before and after a gate.
struct ProbeJob final : swp::Lane::Job {
  swp::Lane* lane = nullptr;
  swp::Future<> gate;
  std::vector<swp::Lane::Activity> seen;
  swp::Co<void> co;

  swp::Co<void> body() {
    seen.push_back(lane->activity());
    co_await gate;
    seen.push_back(lane->activity());
  }

  void start(swp::Lane& on) noexcept override {
    co = body();
    start_job(co, on);
  }
};

}  // namespace

TEST_CASE("a lane tells whether its job runs, is suspended, or is about to resume") {
  using Activity = swp::Lane::Activity;
  swp::SimScheduler sim;
  swp::Lane lane(sim, "probe");
  swp::Promise<> gate;
  ProbeJob job;
  job.lane = &lane;
  job.gate = gate.get_future();
  CHECK(lane.activity() == Activity::idle);
  lane.submit(job);
  CHECK(lane.activity() == Activity::idle);  // queued, not started
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK(lane.activity() == Activity::suspended);  // awaits the gate; nothing resumed it
  gate.set_value();
  CHECK(lane.activity() == Activity::resumable);  // its continuation waits for the lane
  CHECK(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(lane.activity() == Activity::idle);
  CHECK(job.seen == std::vector<Activity>{Activity::running, Activity::running});
}

namespace {

// A job that logs its id and finishes at once.
struct LoggedJob final : swp::Lane::Job {
  int id = 0;
  std::vector<int>* log = nullptr;
  void start(swp::Lane& lane) noexcept override {
    log->push_back(id);
    lane.finish_job();
  }
};

// Logs 1, ends its job, submits `x_job` to lane `x`, then `b_job` to lane `b` with submit_next
// (the last thing its step does).
struct ReleasingJob final : swp::Lane::Job {
  std::vector<int>* log = nullptr;
  swp::Lane* x = nullptr;
  swp::Lane* b = nullptr;
  swp::Lane::Job* x_job = nullptr;
  swp::Lane::Job* b_job = nullptr;
  void start(swp::Lane& lane) noexcept override {
    log->push_back(1);
    lane.finish_job();
    x->submit(*x_job);
    b->submit_next(*b_job);
  }
};

// Job 1 (a ReleasingJob: job 4 to lane `x`, then job 2 to lane `b` with submit_next) and
// logged jobs 2, 3 and 4, all logging to `log`.
struct ReleasingChain {
  std::vector<int> log;
  LoggedJob job2, job3, job4;
  ReleasingJob job1;
  ReleasingChain(swp::Lane& x, swp::Lane& b) {
    int id = 2;
    for (LoggedJob* j : {&job2, &job3, &job4}) {
      j->id = id++;
      j->log = &log;
    }
    job1.log = &log;
    job1.x = &x;
    job1.b = &b;
    job1.x_job = &job4;
    job1.b_job = &job2;
  }
  ReleasingChain(const ReleasingChain&) = delete;
  ReleasingChain& operator=(const ReleasingChain&) = delete;
};

}  // namespace

TEST_CASE("a job submitted with submit_next at the end of a step runs right after it") {
  // One thread, so the order is deterministic. Job 1 (lane a) submits job 4 to lane x, then
  // job 2 to lane b with submit_next. Job 2 runs first (the bypass), then job 4 (the thread's
  // next slot), then job 3, submitted before either.
  swp::ThreadPoolScheduler pool(0);
  swp::Lane a(pool, "a"), b(pool, "b"), c(pool, "c"), x(pool, "x");
  ReleasingChain chain(x, b);
  const std::vector<int>& log = chain.log;
  a.submit(chain.job1);
  c.submit(chain.job3);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 2, 4, 3});
  for (swp::Lane* lane : {&a, &b, &c, &x}) CHECK(lane->idle());
}

TEST_CASE("submit_next to a busy lane queues the job behind the lane's own") {
  swp::ThreadPoolScheduler pool(0);
  swp::Lane a(pool, "a"), b(pool, "b");
  ReleasingChain chain(a, b);  // job 4 goes to lane a, behind job 1
  const std::vector<int>& log = chain.log;
  b.submit(chain.job3);  // lane b is scheduled: job 2 must queue behind job 3
  a.submit(chain.job1);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  // Lane b ran 3 then 2 (its order); job 4 queued on lane a behind job 1.
  const auto pos = [&](int id) { return std::find(log.begin(), log.end(), id) - log.begin(); };
  CHECK(log.size() == 4);
  CHECK(pos(3) < pos(2));
  CHECK(pos(1) < pos(4));
  CHECK(a.idle());
  CHECK(b.idle());
}

namespace {
// Logs its id; at the end of its (synchronous) run, post_next's `next`.
struct QuickJob final : swp::Lane::Job {
  int id = 0;
  std::vector<int>* log = nullptr;
  swp::Scheduler* scheduler = nullptr;
  swp::Runnable* next = nullptr;
  void start(swp::Lane& lane) noexcept override {
    log->push_back(id);
    lane.finish_job();
    if (next != nullptr) scheduler->post_next(*next);
  }
};
// Logs its id and posts `posts` in order.
struct PostingRunnable final : swp::Runnable {
  int id = 0;
  std::vector<int>* log = nullptr;
  swp::Scheduler* scheduler = nullptr;
  std::vector<swp::Runnable*> posts;
  void run() noexcept override {
    log->push_back(id);
    for (swp::Runnable* r : posts) scheduler->post(*r);
  }
};
}  // namespace

TEST_CASE("a lane's queued jobs run in a row, unless a step handed its thread work to run next") {
  // One thread. Job 1 hands the thread R (post_next): the lane's run ends there and R goes
  // first. R posts Q1 then Q2: Q2 takes the thread's slot, Q1 goes to its ring, behind the
  // re-posted lane. Q2 runs (the slot); then the lane: job 2 hands nothing over, so job 3
  // follows in the same run, before Q1.
  swp::ThreadPoolScheduler pool(0);
  swp::Lane a(pool, "a");
  std::vector<int> log;
  PostingRunnable q1, q2, r;
  q1.id = 201;
  q2.id = 202;
  r.id = 100;
  for (PostingRunnable* p : {&q1, &q2, &r}) {
    p->log = &log;
    p->scheduler = &pool;
  }
  r.posts = {&q1, &q2};
  QuickJob jobs[3];
  for (int i = 0; i < 3; ++i) {
    jobs[i].id = i + 1;
    jobs[i].log = &log;
    jobs[i].scheduler = &pool;
  }
  jobs[0].next = &r;
  for (QuickJob& j : jobs) a.submit(j);
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, 100, 202, 2, 3, 201});
  CHECK(a.idle());
}

namespace {

// The owner of a claim in the tests: it holds the lane while `holding` says so.
struct TestClaim final : swp::Lane::Claim {
  std::atomic<bool> holding{false};
  [[nodiscard]] bool holds_lane() const noexcept override { return holding.load(); }
};

// Claims need heavy fences (membarrier); a machine without them claims nothing.
bool claims_work() {
  if (swp::detail::asymmetric_fences_available()) return true;
  MESSAGE("skipped: no heavy fences (membarrier) here, lanes cannot be claimed");
  return false;
}

}  // namespace

TEST_CASE("a claimed lane starts no job until its owner ends the claim a submitter revoked") {
  if (!claims_work()) return;
  swp::SimScheduler sim;
  swp::Lane lane(sim, "claimed");
  GatedLog shared;
  const std::vector<int>& log = shared.log;
  std::vector<GatedJob> job = shared.jobs(2);
  TestClaim owner, other;
  REQUIRE(lane.try_claim(owner));
  CHECK(lane.claim_holds(owner));
  CHECK(lane.claimed_by(owner));
  CHECK_FALSE(lane.idle());              // the claim holds the lane like a job
  CHECK_FALSE(lane.try_claim(other));  // one claim at a time
  CHECK_FALSE(lane.claim_holds(other));

  owner.holding = true;  // one of the owner's jobs runs: the submitted ones must wait
  lane.submit(job[0]);
  lane.submit(job[1]);
  CHECK_FALSE(lane.claim_holds(owner));  // revoked, for the owner to see
  CHECK(lane.claimed_by(owner));         // but not ended: the owner's job still runs
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK(log.empty());

  lane.end_claim(owner);  // one of its jobs holds the lane: that job's end must end the claim
  CHECK(lane.claimed_by(owner));
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK(log.empty());
  owner.holding = false;
  lane.end_claim(owner);  // at its job's end, the owner sees the revocation and ends the claim
  CHECK_FALSE(lane.claimed_by(owner));
  REQUIRE(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(log == std::vector<int>{1, -1, 2, -2});
  lane.end_claim(owner);  // ended already: nothing happens
  CHECK(lane.idle());
}

TEST_CASE("a submit to a claimed lane whose owner holds nothing ends the claim at once") {
  if (!claims_work()) return;
  swp::ThreadPoolScheduler pool(0);
  swp::Lane lane(pool, "claimed");
  GatedLog shared;
  const std::vector<int>& log = shared.log;
  std::vector<GatedJob> job = shared.jobs(1);
  TestClaim owner, later;
  REQUIRE(lane.try_claim(owner));
  lane.submit(job[0]);  // the owner is between its jobs: the submitter ends the claim
  CHECK_FALSE(lane.claimed_by(owner));
  CHECK_FALSE(lane.claim_holds(owner));
  CHECK_FALSE(pool.drive_until([] { return false; }, swp::Clock::time_point::min()));
  CHECK(log == std::vector<int>{1, -1});
  CHECK(lane.idle());
  // A later claim of someone else is not the first owner's: it still sees its claim revoked.
  REQUIRE(lane.try_claim(later));
  CHECK(lane.claim_holds(later));
  CHECK_FALSE(lane.claim_holds(owner));
  lane.end_claim(owner);  // not its claim: nothing happens
  CHECK(lane.claimed_by(later));
  lane.end_claim(later);
  CHECK(lane.idle());
}

TEST_CASE("a lane cannot be claimed while a job is queued on it or runs") {
  if (!claims_work()) return;
  swp::SimScheduler sim;
  swp::Lane lane(sim, "busy");
  GatedLog shared;
  std::vector<GatedJob> job = shared.jobs(1);
  swp::Promise<> gate;
  job[0].gate = gate.get_future();
  TestClaim owner;
  lane.submit(job[0]);
  CHECK_FALSE(lane.try_claim(owner));  // queued
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK_FALSE(lane.try_claim(owner));  // started, suspended at its gate
  gate.set_value();
  REQUIRE(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(lane.try_claim(owner));
  lane.end_claim(owner);
}

namespace {
// A coroutine the claim's owner starts with the lane as its resumer (no job: the claim holds
// the lane), logging 10 before and 11 after its gate.
swp::Co<void> owned_body(swp::Future<> gate, std::vector<int>& log) {
  log.push_back(10);
  co_await gate;
  log.push_back(11);
}
}  // namespace

TEST_CASE("under a claim, the owner's coroutine continues on the lane before revoking jobs") {
  if (!claims_work()) return;
  swp::SimScheduler sim;
  swp::Lane lane(sim, "claimed");
  GatedLog shared;
  const std::vector<int>& log = shared.log;
  std::vector<GatedJob> job = shared.jobs(1);
  TestClaim owner;
  REQUIRE(lane.try_claim(owner));
  owner.holding = true;
  swp::Promise<> gate;
  std::vector<int> owned_log;
  swp::Co<void> co = owned_body(gate.get_future(), owned_log);
  bool done = false;
  co.start(&lane, [](void* flag, std::exception_ptr&) noexcept { *static_cast<bool*>(flag) = true; },
           &done);
  lane.submit(job[0]);  // revokes; waits for the owner's coroutine
  CHECK(lane.activity() == swp::Lane::Activity::suspended);
  gate.set_value();  // the continuation goes to the lane, and runs although the lane is claimed
  CHECK_FALSE(sim.drive_until([] { return false; }, sim.now() + 1s));
  CHECK(done);
  CHECK(owned_log == std::vector<int>{10, 11});
  CHECK(log.empty());
  owner.holding = false;
  lane.end_claim(owner);
  REQUIRE(sim.drive_until([&] { return lane.idle(); }, sim.now() + 1s));
  CHECK(log == std::vector<int>{1, -1});
}

}  // namespace test_lane
