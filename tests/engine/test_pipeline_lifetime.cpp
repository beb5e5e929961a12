// A pipeline's lifetime: destroying it drains what is in flight, a body that ignores
// cancellation breaks it (and a later refill works once the body returned, while destroying it
// meanwhile is fatal, naming the body, after one drain deadline; so is destroying it where its
// scheduler cannot run the lanes any more), and retire_after_device holds retirement until the
// iteration's device work completed.

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/cli.hpp"
#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "support/text.hpp"
#include "swp/async/future.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/engine/asio.hpp"
#include "swp/engine/asio_runtime.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/pipeline.hpp"

namespace test_pipeline_lifetime {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<std::uint64_t>;

}  // namespace

namespace {

// Sleeps until `flag` is set or `limit` passed (so that no bug hangs the suite); the flag.
bool wait_for_flag(const std::atomic<bool>& flag, std::chrono::seconds limit = 20s) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(1ms);
  return flag.load();
}

// A plan whose only task, on lane "slow", spins in iteration 0 without ever looking at
// cancellation until `release` is set (or, so that no bug hangs the suite, for 20 s): it
// outlives every deadline of the run. The lane needs a thread of its own (dedicated): a
// caller helping in progress() that ran the body itself could not look at its deadlines.
swp::Plan<Ctx> holdout_plan(std::atomic<bool>& release, std::atomic<bool>& returned) {
  swp::Plan<Ctx> plan;
  plan.add("Holdout", [&release, &returned](Ctx& ctx) {
    if (ctx.iter_idx != 0) return;
    wait_for_flag(release);
    returned.store(true);
  }, {.thread_group = "slow"});
  return plan;
}

// Fills `pipe` and lets the holdout body break it: progress() times out and cannot drain.
// The error names the failure that started the drain (it once said only "could not drain").
void break_pipeline(swp::Pipeline<Ctx>& pipe) {
  pipe.set_timeouts({.retire = 100ms, .check_interval = 5ms, .drain = 100ms});
  pipe.fill_pipeline(std::vector<std::uint64_t>{0, 1});
  std::string what;
  try {
    (void)pipe.progress();
  } catch (const swp::PipelineTimeout& e) {
    what = e.what();
  }
  CHECK(what.find("could not drain") != std::string::npos);
  CHECK(what.find("could not drain after a failure (iteration 0 did not retire within 100 ms") !=
        std::string::npos);
}

// A pipeline broken by the holdout body (which still runs until `release` is set).
template <class Engine>
struct BrokenPipeline {
  swp::Runtime rt{swp::RuntimeOptions{.workers = 2, .dedicated_lanes = {"slow"}}};
  std::atomic<bool> release{false}, returned{false};
  std::unique_ptr<swp::Pipeline<Ctx>> pipe =
      Engine::template make<Ctx>(rt, holdout_plan(release, returned), 2);
  BrokenPipeline() { break_pipeline(*pipe); }
};

}  // namespace

TEST_CASE_TEMPLATE("destroying a filled pipeline drains what is in flight first", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Step (iteration 1) runs on its lane's thread when the pipeline is destroyed; the drain
  // must end it before the base class's destructor runs (TSan once saw the lane's virtual
  // call into the pipeline race with that destructor).
  swp::Runtime rt({.workers = 2, .dedicated_lanes = {"step"}});
  std::atomic<int> started{0}, ended{0};
  std::atomic<bool> step_running{false}, release{false};
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx&) {}, {.stage = 0, .thread_group = "io"});
  auto step = plan.add("Step", [&](Ctx& ctx) {
    ++started;
    if (ctx.iter_idx == 1) {
      step_running.store(true);
      wait_for_flag(release);
    }
    ++ended;
  }, {.stage = 1, .thread_group = "step"});
  plan.intra_iter_deps = {{step, load}};
  auto pipe = Engine::template make<Ctx>(rt, plan, 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  std::vector<std::int64_t> seen;
  pipe->on_retire([&](const Ctx& ctx) { seen.push_back(static_cast<std::int64_t>(ctx.iter_idx)); });
  pipe->fill_pipeline(std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(swp::test::iter_of(pipe->progress()) == 0);
  REQUIRE(wait_for_flag(step_running));
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    release.store(true);
  });
  pipe.reset();
  releaser.join();
  CHECK(started.load() == ended.load());
  REQUIRE(seen.size() >= 2);  // iteration 0, and what was in flight
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<std::int64_t>(i));
}

TEST_CASE_TEMPLATE("destroying a broken pipeline waits for the body that ignored cancellation",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The body still runs on its lane's thread when the pipeline is destroyed; freeing the core
  // then let the body's return step write into freed instances (use-after-free under ASan).
  BrokenPipeline<Engine> broken;
  auto& pipe = broken.pipe;
  CHECK_THROWS_AS(pipe->fill_pipeline(std::vector<std::uint64_t>{0}), swp::PipelineStateError);
  // The teardown deadline is the drain deadline: generous, since the releaser may be slow.
  pipe->set_timeouts({.drain = 30s});
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    broken.release.store(true);
  });
  pipe.reset();
  CHECK(broken.returned.load());  // the destructor returned only after the body did
  releaser.join();
}

TEST_CASE_TEMPLATE("a broken pipeline refills once the body that ignored cancellation returned",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  BrokenPipeline<Engine> broken;
  auto& pipe = broken.pipe;
  broken.release.store(true);
  REQUIRE(wait_for_flag(broken.returned));
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  std::vector<std::int64_t> retired;
  // Its last step may still be on the way out of the engine: fill waits for it.
  const std::int64_t first = pipe->next_iteration();
  pipe->fill_pipeline(std::vector<std::uint64_t>{5, 6, 7});
  while (auto i = pipe->progress()) retired.push_back(i->iter());
  CHECK(retired == std::vector<std::int64_t>{first, first + 1, first + 2});
}

// Runs in a child process only (see the next case): the pipeline is destroyed while its body
// never returns, which must end the process with a fatal error naming the body.
TEST_CASE("child: destroying a pipeline whose body never returns is fatal" * doctest::skip()) {
  BrokenPipeline<swp::test::UseDataFlow> broken;
  broken.pipe.reset();  // aborts after the drain deadline (100 ms)
  FAIL("the destructor returned while the body still ran");
}

TEST_CASE("destroying a pipeline whose body never returns is a fatal error naming the body") {
  const swp::test::TempFile err("", ".err");
  const std::string command = "timeout 120 " + swp::test::quoted(std::filesystem::read_symlink("/proc/self/exe").string()) +
                              " --no-skip --test-case='child: destroying a pipeline whose "
                              "body never returns is fatal' >/dev/null 2>" +
                              swp::test::quoted(err.str());
  const int status = std::system(command.c_str());
  CHECK(status != 0);
  const std::string what = swp::test::read_text(err.path());
  CHECK(what.find("swp: fatal: a pipeline is destroyed while its task bodies still run") !=
        std::string::npos);
  CHECK(what.find("Holdout (iter 0) on lane 'slow'") != std::string::npos);
}

namespace {

// What a child process ran: its exit status and its stderr.
struct ChildRun {
  int status = 0;
  std::string err;
};

// Runs the test case `name` (a skipped "child: ..." case) of this binary in a child process.
ChildRun run_child(const std::string& name) {
  const swp::test::TempFile err("", ".err");
  const std::string command =
      "timeout 120 " + swp::test::quoted(std::filesystem::read_symlink("/proc/self/exe").string()) +
      " --no-skip --test-case=" + swp::test::quoted(name) + " >/dev/null 2>" +
      swp::test::quoted(err.str());
  const int status = std::system(command.c_str());
  return {status, swp::test::read_text(err.path())};
}

// A scheduler on a pool of its own whose clock, once armed, jumps to the deadline of every
// wait that nothing can end, telling each jump on stderr: a teardown's deadlines counted
// without taking their time.
class JumpingClock final : public swp::Scheduler {
 public:
  void arm() { armed_.store(true); }
  void post(swp::Runnable& r) noexcept override { pool_.post(r); }
  bool drive_until(const std::function<bool()>& done, swp::Clock::time_point deadline) override {
    using TimePoint = swp::Clock::time_point;
    if (!armed_.load())
      return pool_.drive_until(done, deadline == TimePoint::min() || deadline == TimePoint::max()
                                         ? deadline
                                         : deadline - offset());
    if (pool_.drive_until(done, TimePoint::min()) || deadline == TimePoint::min()) return done();
    const auto now = this->now();
    if (!done() && deadline > now && deadline != TimePoint::max()) {
      offset_.fetch_add((deadline - now).count());
      std::fprintf(stderr, "jumped %lld ms\n",
                   static_cast<long long>(
                       std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count()));
    }
    return done();
  }
  [[nodiscard]] swp::Clock::time_point now() const override { return swp::Clock::now() + offset(); }

 protected:
  void wake_drivers() noexcept override { pool_.notify(); }

 private:
  [[nodiscard]] swp::Clock::duration offset() const { return swp::Clock::duration(offset_.load()); }
  swp::ThreadPoolScheduler pool_{1};
  std::atomic<bool> armed_{false};
  std::atomic<swp::Clock::duration::rep> offset_{0};
};

// How many lines of `text` are `line`.
int count_lines(const std::string& text, const std::string& line) {
  int n = 0;
  for (std::size_t at = text.find(line + "\n"); at != std::string::npos;
       at = text.find(line + "\n", at + 1))
    if (at == 0 || text[at - 1] == '\n') ++n;
  return n;
}

}  // namespace

// Runs in a child process only (see the next case).
TEST_CASE("child: a pipeline destroyed mid-run under a body that never returns" * doctest::skip()) {
  auto owned = std::make_unique<JumpingClock>();
  JumpingClock& clock = *owned;
  swp::Runtime rt(std::move(owned), {.dedicated_lanes = {"slow"}});
  std::atomic<bool> release{false}, started{false};
  swp::Plan<Ctx> plan;
  plan.add("Holdout",
           [&](Ctx& ctx) {
             if (ctx.iter_idx != 1) return;
             started.store(true);
             wait_for_flag(release);  // ignores cancellation (20 s: far past the abort)
           },
           {.thread_group = "slow"});
  auto pipe = swp::test::UseDataFlow::make<Ctx>(rt, plan, 2);
  pipe->set_timeouts({.retire = 3000ms, .check_interval = 60000ms, .drain = 7000ms});
  pipe->fill_pipeline(std::vector<std::uint64_t>{0, 1});
  REQUIRE(swp::test::iter_of(pipe->progress()) == 0);
  REQUIRE(wait_for_flag(started));
  clock.arm();
  pipe.reset();  // the run ends: iteration 1 cannot retire, then cannot drain: fatal
  FAIL("the destructor returned while the body still ran");
}

TEST_CASE("a pipeline destroyed mid-run waits out one drain deadline, then aborts") {
  // It waited two: the end of the run waited for the body that ignored cancellation (and
  // broke the pipeline), then the teardown waited for it again.
  const ChildRun child =
      run_child("child: a pipeline destroyed mid-run under a body that never returns");
  CHECK(child.status != 0);
  const std::string& err = child.err;
  CHECK(swp::test::contains(err,
                            "swp: fatal: a pipeline is destroyed while its task bodies "
                            "still run: they ignored cancellation and did not return "
                            "within 7000 ms"));
  CHECK(swp::test::contains(err, "Holdout (iter 1) on lane 'slow'"));
  CHECK(count_lines(err, "jumped 3000 ms") == 1);  // iteration 1's retire deadline
  CHECK(count_lines(err, "jumped 7000 ms") == 1);  // the drain deadline, once
}

// Runs in a child process only (see the next case).
TEST_CASE("child: a pipeline destroyed unfinished on a thread of its stopped io_context" *
          doctest::skip()) {
  boost::asio::io_context io;
  swp::AsioRuntime rt(io.get_executor());
  swp::Promise<> never;
  std::unique_ptr<swp::Pipeline<Ctx>> pipe;
  swp::Plan<Ctx> plan;
  plan.add("Step",
           [&](Ctx&) -> swp::Co<void> {
             // Iteration 0 in flight, suspended: the context stops, and the pipeline goes.
             boost::asio::post(io, [&] {
               io.stop();
               pipe.reset();  // nothing runs the lanes' steps any more: fatal, naming why
             });
             co_await never.get_future();
           },
           {.thread_group = "step"});
  pipe = swp::test::UseDataFlow::make<Ctx>(rt, plan, 2);
  pipe->fill_pipeline(std::vector<std::uint64_t>{0, 1, 2});
  swp::async_progress(*pipe, [](std::exception_ptr, std::optional<swp::Retired<Ctx>>) {});
  io.run();
  FAIL("the destructor returned while its steps could not run");
}

TEST_CASE("a pipeline destroyed on a thread of its stopped io_context aborts with the report") {
  // It ended in std::terminate: the teardown's wait threw the scheduler's logic_error out of
  // the noexcept destructor.
  const ChildRun child =
      run_child("child: a pipeline destroyed unfinished on a thread of its stopped io_context");
  CHECK(child.status != 0);
  const std::string& err = child.err;
  CHECK_FALSE(swp::test::contains(err, "terminate called"));
  CHECK(swp::test::contains(err,
                            "swp: fatal: a pipeline is destroyed while its task bodies "
                            "still run: they cannot be waited for: "
                            "swp::AsioScheduler::drive_until: the io_context this thread "
                            "runs was stopped"));
  CHECK(swp::test::contains(err, "Step (iter 0)"));
}

namespace {
struct DeviceFields {
  std::atomic<int> doubled{0};  // written by the stream's work, read at retirement
  DeviceFields() = default;
  DeviceFields(DeviceFields&&) noexcept {}  // a context is reset, never moved while in use
  DeviceFields& operator=(DeviceFields&&) noexcept {
    doubled.store(0);
    return *this;
  }
};
using DeviceCtx = swp::IterContext<int, DeviceFields>;
}  // namespace

TEST_CASE_TEMPLATE("retire_after_device: an iteration retires after its device work completed",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The device work (a host stream's thread) writes the result some time after its task
  // finished: only retire_after_device makes every retirement see it.
  // `own_lanes`: each task alone on its lane, so with one thread its instances run where their
  // period or admission releases them (TaskInfo::in_place).
  const auto make_plan = [](bool own_lanes) {
    swp::Plan<DeviceCtx> plan;
    plan.add(
        "Compute",
        [](DeviceCtx& ctx, swp::TaskScope& scope) {
          scope.enqueue([&ctx] {
            std::this_thread::sleep_for(1ms);
            ctx.doubled.store(2 * ctx.batch, std::memory_order_relaxed);
          });
        },
        {.stage = 0, .stream = "compute", .thread_group = own_lanes ? "compute" : "shared"});
    plan.add("Other", [](DeviceCtx&) {},
             {.stage = 1, .thread_group = own_lanes ? "other" : "shared"});
    return plan;
  };
  const swp::Plan<DeviceCtx> plan = make_plan(false);
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<DeviceCtx>(rt, plan, 3);
  pipe->set_timeouts({.retire = 30s, .drain = 30s});
  pipe->retire_after_device();
  CHECK(pipe->retire_after_device_enabled());
  std::vector<int> at_retire;
  pipe->on_retire([&](const DeviceCtx& c) { at_retire.push_back(c.doubled.load()); });
  std::vector<int> batches;
  for (int b = 1; b <= 12; ++b) batches.push_back(b);
  pipe->fill_pipeline(batches);
  std::vector<int> returned;
  while (auto r = pipe->progress()) returned.push_back(r->context().doubled.load());
  std::vector<int> expected;
  for (int b : batches) expected.push_back(2 * b);
  CHECK(at_retire == expected);
  CHECK(returned == expected);
  // next() waits the same way.
  pipe->fill_pipeline(batches);
  returned.clear();
  swp::sync_wait([&]() -> swp::Co<void> {
    while (auto r = co_await pipe->next()) returned.push_back(r->context().doubled.load());
  }());
  CHECK(returned == expected);
  // run() waits the same way, with workers and with the caller the only thread (whose run()
  // may retire inside the clock's advance(), EngineCore::advance_may_retire_, but only an
  // iteration no device work holds).
  for (const unsigned workers : {2u, 0u}) {
    CAPTURE(workers);
    swp::Runtime own({.workers = workers});
    auto by_run = Engine::template make<DeviceCtx>(own, make_plan(true), 3);
    by_run->set_timeouts({.retire = 30s, .drain = 30s});
    by_run->retire_after_device();
    std::vector<int> seen;
    by_run->on_retire([&](const DeviceCtx& c) { seen.push_back(c.doubled.load()); });
    CHECK(by_run->run(batches).iterations == 12);
    CHECK(seen == expected);
  }
}

TEST_CASE_TEMPLATE("a push run that cannot drain hands its queued batches back and closes the queue",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // The queue stayed open: later submissions went into the dead run, the queued batches never
  // reached on_failure, and every fill_submissions() failed to reopen it.
  swp::Runtime rt{swp::RuntimeOptions{.workers = 2, .dedicated_lanes = {"slow"}}};
  std::atomic<bool> release{false}, returned{false};
  auto pipe = Engine::template make<Ctx>(rt, holdout_plan(release, returned), 2);
  std::vector<std::uint64_t> handed_back;  // batches on_failure got as never admitted
  pipe->on_failure([&](const Ctx& ctx, const std::exception_ptr&) {
    if (ctx.iter_idx == -1) handed_back.push_back(ctx.batch);
  });
  pipe->set_timeouts({.retire = 100ms, .check_interval = 5ms, .drain = 100ms});
  pipe->fill_submissions(16);
  for (std::uint64_t b = 0; b < 8; ++b) REQUIRE(pipe->try_submit(b));
  std::string what;
  try {
    (void)pipe->progress();
  } catch (const swp::PipelineTimeout& e) {
    what = e.what();
  }
  CHECK(swp::test::contains(what, "could not drain"));
  // Iteration 0 (the holdout) and what was admitted with it stay in their contexts; the rest
  // came back, in order, and the queue is closed.
  REQUIRE(!handed_back.empty());
  CHECK(handed_back.back() == 7);
  for (std::size_t k = 1; k < handed_back.size(); ++k)
    CHECK(handed_back[k] == handed_back[k - 1] + 1);
  std::uint64_t late = 8;
  CHECK_FALSE(pipe->try_submit(late));
  release.store(true);
  REQUIRE(wait_for_flag(returned));
  // Once the body returned, the push form fills again.
  pipe->fill_submissions(4);
  for (std::uint64_t b = 20; b < 23; ++b) REQUIRE(pipe->try_submit(b));
  pipe->close_submissions();
  int retired = 0;
  while (pipe->progress()) ++retired;
  CHECK(retired == 3);
}

}  // namespace test_pipeline_lifetime
