#include "swp/async/asio_scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/async/lane.hpp"

namespace test_asio_scheduler {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Recorder final : swp::Runnable {
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  void run() noexcept override {
    ran_on = std::this_thread::get_id();
    runs.fetch_add(1);
  }
};

}  // namespace

TEST_CASE("runnables run as handlers on the caller's io_context threads") {
  boost::asio::io_context io;
  swp::AsioScheduler scheduler(io.get_executor());
  Recorder r;
  scheduler.post(r);
  CHECK(r.runs == 0);  // nothing runs until the context does
  std::thread runner([&] { io.run(); });
  const auto runner_id = runner.get_id();
  runner.join();
  CHECK(r.runs == 1);
  CHECK(r.ran_on == runner_id);
}

TEST_CASE("an io_context's threads run the work: not only when driven, never in place") {
  boost::asio::io_context io;
  swp::AsioScheduler scheduler(io.get_executor());
  CHECK_FALSE(scheduler.runs_only_when_driven());
  CHECK(scheduler.run_queue_hooks() == nullptr);  // the plain hooks below
  swp::detail::RunQueueHooks& hooks = swp::detail::run_queue_hooks_of(scheduler);
  bool inside = true;
  bool drives = true;
  hooks.drive_section([&] {
    inside = swp::detail::sole_runner_here(scheduler, hooks);
    drives = hooks.drives_here();
  });
  CHECK_FALSE(hooks.runs_no_work_here());  // (a shared queue of its own kind: none)
  CHECK_FALSE(inside);
  CHECK_FALSE(drives);  // posts go to the io_context, not to a queue of this thread's
}

TEST_CASE("drive_until waits for notify off the context, and runs handlers on it") {
  boost::asio::io_context io;
  swp::AsioScheduler scheduler(io.get_executor());
  SUBCASE("a thread outside the context blocks until notified") {
    std::atomic<bool> flag{false};
    std::thread setter([&] {
      std::this_thread::sleep_for(10ms);
      flag.store(true);
      scheduler.notify();
    });
    CHECK(scheduler.drive_until([&] { return flag.load(); }, swp::Clock::now() + 10s));
    setter.join();
    CHECK_FALSE(scheduler.drive_until([] { return false; }, swp::Clock::now() + 5ms));
  }
  SUBCASE("a handler of a one-thread context runs the other handlers while it waits") {
    Recorder r;
    bool waited = false;
    boost::asio::post(io, [&] {
      scheduler.post(r);  // queued behind this handler on the only thread
      waited = scheduler.drive_until([&] { return r.runs.load() == 1; }, swp::Clock::now() + 10s);
    });
    io.run();
    CHECK(waited);
  }
}

TEST_CASE("drive_until on a thread of a stopped io_context fails at once instead of spinning") {
  boost::asio::io_context io;
  swp::AsioScheduler scheduler(io.get_executor());
  Recorder never;  // queued behind the stopped handler: nothing runs it any more
  int looks = 0;   // how often the wait looked at its condition: once per loop turn
  bool threw = false;
  std::string what;
  boost::asio::post(io, [&] {
    scheduler.post(never);
    io.stop();
    try {
      scheduler.drive_until(
          [&] {
            ++looks;
            return never.runs.load() == 1;
          },
          swp::Clock::now() + 200ms);
    } catch (const std::logic_error& e) {
      threw = true;
      what = e.what();
    }
  });
  io.run();
  CHECK(threw);
  CHECK(what.find("stopped") != std::string::npos);
  CHECK(looks <= 3);  // not a loop turn per slice until the deadline
  CHECK(never.runs.load() == 0);
  // Running what is runnable now (time_point::min()) still just returns: nothing is.
  boost::asio::post(io, [&] {
    io.stop();
    CHECK_FALSE(scheduler.drive_until([] { return false; }, swp::Clock::time_point::min()));
  });
  io.restart();
  io.run();
}

TEST_CASE("the io threads are recognised on a strand and on executors with properties") {
  namespace execution = boost::asio::execution;
  boost::asio::io_context io;
  // Whether must_not_block_here() holds on the io thread (in a handler) and off it (here).
  auto check = [&io](const boost::asio::any_io_executor& executor) {
    swp::AsioScheduler scheduler(executor);
    bool on_io_thread = false;
    boost::asio::post(io, [&] { on_io_thread = scheduler.must_not_block_here(); });
    io.restart();
    io.run_one();  // a tracked executor keeps run() from returning
    CHECK(on_io_thread);
    CHECK_FALSE(scheduler.must_not_block_here());
  };
  SUBCASE("plain") { check(io.get_executor()); }
  SUBCASE("a strand") { check(boost::asio::make_strand(io)); }
  SUBCASE("outstanding_work.tracked") {
    check(boost::asio::require(io.get_executor(), execution::outstanding_work.tracked));
  }
  SUBCASE("blocking.never") {
    check(boost::asio::require(io.get_executor(), execution::blocking.never));
  }
  SUBCASE("a strand of a tracked executor") {
    check(boost::asio::make_strand(
        boost::asio::require(io.get_executor(), execution::outstanding_work.tracked)));
  }
}

TEST_CASE("on a strand, drive_until runs the strand's handlers from outside it, never from in it") {
  boost::asio::io_context io;
  const auto strand = boost::asio::make_strand(io);
  swp::AsioScheduler scheduler(strand);
  Recorder r;
  bool from_io = false, from_strand = true;
  // On the io thread, outside the strand: the nested run reaches the lane's handler.
  boost::asio::post(io, [&] {
    scheduler.post(r);
    from_io = scheduler.drive_until([&] { return r.runs.load() == 1; }, swp::Clock::now() + 30s);
  });
  io.run();
  CHECK(from_io);
  // Inside the strand: its handlers wait for this one, so the wait ends at once, unmet.
  Recorder blocked;
  boost::asio::post(strand, [&] {
    scheduler.post(blocked);
    from_strand =
        scheduler.drive_until([&] { return blocked.runs.load() == 1; }, swp::Clock::now() + 30s);
    CHECK(blocked.runs.load() == 0);
  });
  io.restart();
  io.run();
  CHECK_FALSE(from_strand);
  CHECK(blocked.runs.load() == 1);  // once the strand was free
}

TEST_CASE("a lane on an AsioScheduler stays FIFO and serial with several context threads") {
  boost::asio::io_context io;
  swp::AsioScheduler scheduler(io.get_executor());
  swp::Lane lane(scheduler, "io");
  struct Job final : swp::Lane::Job {
    std::vector<int>* order = nullptr;
    std::atomic<int>* inside = nullptr;
    std::atomic<bool>* overlap = nullptr;
    int k = 0;
    void start(swp::Lane& l) noexcept override {
      if (inside->fetch_add(1) != 0) overlap->store(true);
      order->push_back(k);
      inside->fetch_sub(1);
      l.finish_job();
    }
  };
  std::vector<int> order;
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::vector<Job> jobs(200);
  for (int k = 0; k < 200; ++k) {
    jobs[static_cast<std::size_t>(k)] = Job{};
    auto& j = jobs[static_cast<std::size_t>(k)];
    j.order = &order;
    j.inside = &inside;
    j.overlap = &overlap;
    j.k = k;
    lane.submit(j);
  }
  std::thread a([&] { io.run(); });
  io.run();
  a.join();
  CHECK_FALSE(overlap.load());
  REQUIRE(order.size() == 200);
  for (int k = 0; k < 200; ++k) CHECK(order[static_cast<std::size_t>(k)] == k);
}

namespace {

// Runs until released: stands for a lane step still returning through its lane when the
// scheduler's runtime goes. Once released it looks a while longer whether the scheduler was
// destroyed meanwhile (it must not have been).
struct HeldRunnable final : swp::Runnable {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> returned{false};
  std::atomic<bool> saw_destroyed{false};
  std::atomic<bool>* destroyed = nullptr;
  void run() noexcept override {
    started.store(true);
    while (!release.load()) std::this_thread::yield();
    for (int i = 0; i < 2000; ++i) {
      if (destroyed->load()) saw_destroyed.store(true);
      std::this_thread::yield();
    }
    returned.store(true);
  }
};

}  // namespace

TEST_CASE("an AsioScheduler goes only once no thread runs one of its runnables") {
  boost::asio::io_context io;
  auto scheduler = std::make_unique<swp::AsioScheduler>(io.get_executor());
  std::atomic<bool> destroying{false};
  std::atomic<bool> destroyed{false};
  HeldRunnable held;
  held.destroyed = &destroyed;
  scheduler->post(held);
  std::thread runner([&] { io.run(); });
  while (!held.started.load()) std::this_thread::yield();
  std::thread destroyer([&] {
    destroying.store(true);
    scheduler.reset();
    destroyed.store(true);
  });
  while (!destroying.load()) std::this_thread::yield();
  // The destructor is under way (or about to be) while the runnable runs: it must wait for
  // it. A scheduler that did not would be gone within the runnable's 2000 yields.
  held.release.store(true);
  destroyer.join();
  CHECK_FALSE(held.saw_destroyed.load());
  CHECK(held.returned.load());
  runner.join();
}

TEST_CASE("a runnable an AsioScheduler posted is skipped when it runs after the scheduler went") {
  boost::asio::io_context io;
  Recorder r;
  {
    swp::AsioScheduler scheduler(io.get_executor());
    scheduler.post(r);
  }  // nothing ran it yet: the context was not running
  io.run();  // the handler runs now, and must not touch `r` (whose owner went with the scheduler)
  CHECK(r.runs == 0);
}

}  // namespace test_asio_scheduler
