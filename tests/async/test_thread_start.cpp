#include <doctest/doctest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/alloc_counter.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/async/thread_start.hpp"
#include "swp/async/timer_queue.hpp"
#include "swp/device/host_device.hpp"

namespace test_thread_start {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Role = swp::ThreadStart::Role;

std::string current_thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

// What a hook saw: one entry per call, with the thread's id and its name at the time.
struct HookLog {
  struct Call {
    Role role;
    std::string name;
    unsigned index;
    std::thread::id thread;
    std::string thread_name;
  };

  swp::ThreadStartHook hook() {
    return [this](const swp::ThreadStart& t) {
      std::lock_guard lock(mutex);
      calls.push_back({t.role, std::string(t.name), t.index, std::this_thread::get_id(),
                       current_thread_name()});
      changed.notify_all();
    };
  }

  // The calls once there are `n` (a guard of a minute against a hang, not a timing check).
  std::vector<Call> wait_for(std::size_t n) {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, 60s, [&] { return calls.size() >= n; });
    return calls;
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Call> calls;
};

struct RecordThread final : swp::Runnable {
  std::atomic<bool> ran{false};
  std::thread::id thread;
  void run() noexcept override {
    thread = std::this_thread::get_id();
    ran.store(true);
  }
};

}  // namespace

TEST_CASE("begin_thread names the calling thread after its role, then calls the hook on it") {
  HookLog log;
  std::thread::id id;
  std::thread t([&] {
    id = std::this_thread::get_id();
    swp::begin_thread({Role::stream, "compute", 0}, log.hook());
  });
  t.join();
  const auto calls = log.wait_for(1);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].role == Role::stream);
  CHECK(calls[0].name == "compute");
  CHECK(calls[0].thread == id);
  // Linux keeps 15 characters: "swp-stream:compute" is cut.
  CHECK(calls[0].thread_name == "swp-stream:comp");

  std::thread([&] { swp::begin_thread({Role::worker, {}, 3}, log.hook()); }).join();
  std::thread([&] { swp::begin_thread({Role::lane, "io", 0}, log.hook()); }).join();
  std::thread([&] { swp::begin_thread({Role::timer, {}, 0}, log.hook()); }).join();
  const auto all = log.wait_for(4);
  REQUIRE(all.size() == 4);
  CHECK(all[1].thread_name == "swp-worker3");
  CHECK(all[1].index == 3);
  CHECK(all[2].thread_name == "swp-lane:io");
  CHECK(all[3].thread_name == "swp-timers");
}

TEST_CASE("begin_thread without a hook only names the thread") {
  std::string name;
  std::thread([&] {
    swp::begin_thread({Role::lane, "decode", 0}, {});
    name = current_thread_name();
  }).join();
  CHECK(name == "swp-lane:decode");
}

TEST_CASE("begin_thread names a thread without allocating") {
  // A runtime's threads may start late, inside a window where a benchmark counts the
  // process's allocations (swp-bench dispatch saw the default stream's thread name there).
  std::size_t allocations = 1;
  std::string name;
  std::thread([&] {
    swp::test::AllocationCount count;
    swp::begin_thread({Role::stream, "a-stream-with-a-long-name", 0}, {});
    allocations = count.stop();
    name = current_thread_name();
  }).join();
  CHECK(allocations == 0);
  CHECK(name == "swp-stream:a-st");
}

TEST_CASE("a thread pool's workers each run the hook once, on themselves, before any work") {
  HookLog log;
  {
    swp::ThreadPoolScheduler pool(2, swp::ThreadPoolScheduler::default_spin, log.hook());
    const auto calls = log.wait_for(2);
    REQUIRE(calls.size() == 2);
    std::set<unsigned> indices;
    std::set<std::thread::id> threads;
    for (const auto& c : calls) {
      CHECK(c.role == Role::worker);
      CHECK(c.name.empty());
      CHECK(c.thread != std::this_thread::get_id());
      CHECK(c.thread_name == "swp-worker" + std::to_string(c.index));
      indices.insert(c.index);
      threads.insert(c.thread);
    }
    CHECK(indices == std::set<unsigned>{0, 1});
    CHECK(threads.size() == 2);
    // Work posted from outside runs on one of those threads.
    RecordThread r;
    pool.post(r);
    pool.drive_until([&] { return r.ran.load(); }, swp::Clock::now() + 60s);
    // The caller may have run it while it drove; otherwise a hooked worker did.
    CHECK((r.thread == std::this_thread::get_id() || threads.contains(r.thread)));
  }
  CHECK(log.calls.size() == 2);  // not again at shutdown
}

TEST_CASE("a lane's own pool names its thread after the lane") {
  HookLog log;
  swp::ThreadPoolScheduler pool(1, swp::ThreadPoolScheduler::default_spin, log.hook(), "h2d");
  const auto calls = log.wait_for(1);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].role == Role::lane);
  CHECK(calls[0].name == "h2d");
  CHECK(calls[0].thread_name == "swp-lane:h2d");
}

TEST_CASE("a host stream's thread runs the hook before the stream's first work") {
  HookLog log;
  swp::HostDevice device;
  device.on_thread_start(log.hook());
  auto stream = device.make_stream("copy");
  std::thread::id ran_on;
  std::size_t hooks_before_work = 0;
  stream->enqueue([&] {
    ran_on = std::this_thread::get_id();
    std::lock_guard lock(log.mutex);
    hooks_before_work = log.calls.size();
  });
  stream->synchronize();
  const auto calls = log.wait_for(1);
  REQUIRE(calls.size() == 1);
  CHECK(hooks_before_work == 1);
  CHECK(calls[0].role == Role::stream);
  CHECK(calls[0].name == "copy");
  CHECK(calls[0].thread == ran_on);
  CHECK(calls[0].thread_name == "swp-stream:copy");
}

TEST_CASE("a timer queue's thread runs the hook before the first timer") {
  HookLog log;
  swp::TimerQueue timers(log.hook());
  std::atomic<bool> fired{false};
  std::thread::id fired_on;
  timers.schedule(swp::Clock::now(), [&] {
    fired_on = std::this_thread::get_id();
    fired.store(true);
  });
  const auto calls = log.wait_for(1);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].role == Role::timer);
  CHECK(calls[0].thread_name == "swp-timers");
  while (!fired.load()) std::this_thread::yield();
  CHECK(fired_on == calls[0].thread);
}

}  // namespace test_thread_start
