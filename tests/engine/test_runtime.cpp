#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/async/sync_wait.hpp"
#include "swp/config.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"
#include "swp/device/stream_limit_error.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/runtime.hpp"

namespace test_runtime {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;

// A device of the user's own: host streams, counting what the runtime asks it for.
class CountingDevice final : public swp::Device {
 public:
  std::unique_ptr<swp::Stream> make_stream(std::string name) override {
    ++streams;
    return host_.make_stream(std::move(name));
  }
  std::unique_ptr<swp::Event> make_event() override {
    ++events;
    return host_.make_event();
  }
  [[nodiscard]] std::string_view backend() const noexcept override { return "counting"; }

  int streams = 0;
  int events = 0;

 private:
  swp::HostDevice host_;
};

// Two tasks on two streams: the consumer's stream waits for the producer's event each
// iteration; the values show the order held.
swp::Plan<Ctx> two_stream_plan(std::vector<int>& produced, std::vector<int>& consumed) {
  swp::Plan<Ctx> plan;
  plan.add("Produce",
           [&produced](Ctx& ctx, swp::TaskScope& scope) {
             const auto i = static_cast<std::size_t>(ctx.iter_idx);
             const int batch = ctx.batch;
             scope.enqueue([&produced, i, batch] { produced[i] = batch; }, 2ms);
           },
           {.stage = 0, .stream = "a"});
  plan.add("Consume",
           [&produced, &consumed](Ctx& ctx, swp::TaskScope& scope) {
             const auto i = static_cast<std::size_t>(ctx.iter_idx);
             scope.enqueue([&produced, &consumed, i] { consumed[i] = produced[i] + 1; }, 1ms);
           },
           {.stage = 1, .stream = "b"});
  plan.intra_iter_deps.push_back({"Consume", "Produce"});
  return plan;
}

// The ordinal the calling thread was bound to by PlacedDevice::bind_thread (-1: never).
thread_local int bound_ordinal = -1;

// A GPU of the user's own as far as placement goes: host streams, and a bind_thread that
// records its ordinal on the calling thread, as CudaDevice's does with cudaSetDevice.
class PlacedDevice final : public swp::Device {
 public:
  explicit PlacedDevice(int ordinal) : ordinal_(ordinal) {}
  std::unique_ptr<swp::Stream> make_stream(std::string name) override {
    return host_.make_stream(std::move(name));
  }
  [[nodiscard]] std::string_view backend() const noexcept override { return "placed"; }
  void on_thread_start(swp::ThreadStartHook hook) override {
    host_.on_thread_start(std::move(hook));
  }
  void bind_thread() noexcept override { bound_ordinal = ordinal_; }

 private:
  int ordinal_;
  swp::HostDevice host_;
};

}  // namespace

TEST_CASE("a runtime given a device takes its streams and the engines' events from it") {
  auto owned = std::make_unique<CountingDevice>();
  CountingDevice& device = *owned;
  swp::Runtime rt(std::move(owned), {.workers = 1});
  CHECK(&rt.device() == &device);
  CHECK(rt.backend() == swp::Backend::host);  // a device swp does not name runs in real time
  CHECK_FALSE(rt.scheduler().virtual_time());

  constexpr int iterations = 8;  // per run; two runs
  std::vector<int> produced(2 * iterations, 0), consumed(2 * iterations, -1);
  const auto plan = two_stream_plan(produced, consumed);
  {
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    // An instance's event is made at its first record, not with the pipeline: at most one per
    // (task, sync entry), none per iteration once each has recorded.
    CHECK(device.events == 0);
    std::vector<int> batches;
    for (int i = 0; i < iterations; ++i) batches.push_back(10 * i);
    CHECK(pipe.run(batches).iterations == iterations);
    const int events_made = device.events;
    CHECK(events_made == 2 * 3);  // both tasks record, max_depth 2: 3 entries
    for (int& batch : batches) batch += 10 * iterations;
    CHECK(pipe.run(batches).iterations == iterations);
    CHECK(device.events == events_made);
  }
  CHECK(device.streams == 2);
  for (int i = 0; i < 2 * iterations; ++i) {
    CAPTURE(i);
    CHECK(consumed[static_cast<std::size_t>(i)] == 10 * i + 1);
  }
}

TEST_CASE("a runtime given a sim device runs on the device's virtual time") {
  auto owned = std::make_unique<swp::SimDevice>();
  swp::SimScheduler* clock = owned->virtual_time();
  swp::Runtime rt(std::move(owned));
  CHECK(rt.backend() == swp::Backend::sim);
  CHECK(&rt.scheduler() == clock);
  CHECK(rt.scheduler().virtual_time());

  constexpr int iterations = 4;
  std::vector<int> produced(iterations, 0), consumed(iterations, -1);
  const auto plan = two_stream_plan(produced, consumed);
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  const auto start = rt.now();
  CHECK(pipe.run(std::vector<int>{1, 2, 3, 4}).iterations == iterations);
  // Modelled device time, on the virtual clock: at least one 2 ms + 1 ms chain.
  CHECK(rt.now() - start >= 3ms);
  CHECK(consumed == std::vector<int>{2, 3, 4, 5});
}

TEST_CASE("a runtime made from options makes its device by backend name") {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    CHECK(rt.backend() == backend);
    CHECK(rt.device().backend() == swp::backend_name(backend));
  }
#if !SWP_HAVE_CUDA
  CHECK_THROWS_WITH_AS(swp::Runtime({.backend = swp::Backend::cuda}),
                       doctest::Contains("not compiled into this build"), std::invalid_argument);
#endif
}

TEST_CASE(
    "a host runtime refuses a plan with more streams than max_host_streams when it is built") {
  std::vector<int> produced(4, 0), consumed(4, -1);
  swp::Plan<Ctx> plan = two_stream_plan(produced, consumed);  // streams "a" and "b"
  plan.add("Third", [](Ctx&) {}, {.stage = 0, .stream = "c"});
  SUBCASE("the pipeline's construction fails, naming a stream and the option") {
    for (const bool own_scheduler : {false, true}) {
      CAPTURE(own_scheduler);
      const swp::RuntimeOptions options{.workers = 1, .max_host_streams = 2};
      auto rt = own_scheduler ? std::make_unique<swp::Runtime>(
                                    std::make_unique<swp::ThreadPoolScheduler>(1), options)
                              : std::make_unique<swp::Runtime>(options);
      // The second of the plan's streams would take the place kept for "default".
      CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(*rt, plan, 2),
                           doctest::Contains("which is kept for the stream 'default'"),
                           std::length_error);
      CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(*rt, plan, 2),
                           doctest::Contains("RuntimeOptions::max_host_streams"),
                           std::length_error);
      // Its own type (swp run tells it from other length_errors), naming the stream refused.
      try {
        swp::DataFlowPipeline<Ctx> pipe(*rt, plan, 2);
        FAIL("the pipeline was built");
      } catch (const swp::StreamLimitError& e) {
        CHECK(e.stream() == "b");
        CHECK(std::string(e.what()).starts_with("Runtime: cannot make stream 'b'"));
      }
      CHECK(dynamic_cast<swp::HostDevice&>(rt->device()).streams() == 1);
    }
  }
  SUBCASE("a plan within the limit runs") {
    swp::Runtime rt({.workers = 1, .max_host_streams = 4});  // "a", "b", "c" and "default"
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    CHECK(pipe.run(std::vector<int>{1, 2, 3, 4}).iterations == 4);
    CHECK(consumed == std::vector<int>{2, 3, 4, 5});
  }
  SUBCASE("sim has no such limit") {
    swp::Runtime rt({.backend = swp::Backend::sim, .max_host_streams = 1});
    CHECK_FALSE(rt.device().streams_left().has_value());
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    CHECK(pipe.run(std::vector<int>{1, 2, 3, 4}).iterations == 4);
  }
}

TEST_CASE(
    "a host runtime keeps a place for 'default': a plan that fills the limit fails when built") {
  std::vector<int> produced(4, 0), consumed(4, -1);
  swp::Plan<Ctx> plan = two_stream_plan(produced, consumed);  // streams "a" and "b"
  plan.add("Third", [](Ctx&) {}, {.stage = 0, .stream = "c"});
  const auto host = [](swp::Runtime& rt) -> swp::HostDevice& {
    return dynamic_cast<swp::HostDevice&>(rt.device());
  };
  SUBCASE("exactly max_host_streams named streams: construction fails, naming the stream") {
    for (const bool clock : {false, true}) {
      CAPTURE(clock);
      swp::Runtime rt({.workers = 1, .max_host_streams = 3});
      const auto build = [&] {
        if (clock) {
          swp::ClockPipeline<Ctx> pipe(rt, plan);
        } else {
          swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
        }
      };
      CHECK_THROWS_WITH_AS(build(),
                           doctest::Contains("Runtime: cannot make stream 'c': the runtime has 2 "
                                             "streams and its host device's stream limit leaves "
                                             "one place only, which is kept for the stream "
                                             "'default'"),
                           std::length_error);
      CHECK(host(rt).streams() == 2);
      // The place is still there for "default".
      rt.stream("default").synchronize();
      CHECK(host(rt).streams() == 3);
      CHECK(host(rt).streams_left() == 0);
    }
  }
  SUBCASE("one place more: construction succeeds and every use of 'default' gets it") {
    swp::Runtime rt({.workers = 1, .max_host_streams = 4});
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    CHECK(host(rt).streams() == 3);
    CHECK(host(rt).streams_left() == 1);
    CHECK(pipe.run_serial(std::vector<int>{1, 2}).iterations == 2);  // on "default"
    pipe.synchronize();
    CHECK(pipe.run(std::vector<int>{3, 4}).iterations == 2);
    CHECK(consumed == std::vector<int>{2, 3, 4, 5});
    CHECK(host(rt).streams() == 4);
  }
  SUBCASE("a plan that uses 'default' itself may fill the limit with it") {
    plan.add("OnDefault", [](Ctx&) {}, {.stage = 0});
    swp::Runtime rt({.workers = 1, .max_host_streams = 4});
    swp::ClockPipeline<Ctx> pipe(rt, plan);
    CHECK(host(rt).streams() == 4);
    CHECK(pipe.run(std::vector<int>{1, 2, 3, 4}).iterations == 4);
  }
  SUBCASE("once 'default' exists, the other streams may take the last place") {
    swp::Runtime rt({.workers = 1, .max_host_streams = 4});
    rt.stream("default");
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    CHECK(host(rt).streams_left() == 0);
    CHECK(pipe.run(std::vector<int>{1, 2, 3, 4}).iterations == 4);
  }
  SUBCASE("a device given to the runtime keeps the place too") {
    swp::Runtime rt(std::make_unique<swp::HostDevice>(swp::HostDeviceOptions{.max_streams = 3}),
                    {.workers = 1});
    CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(rt, plan, 2),
                         doctest::Contains("cannot make stream 'c'"), std::length_error);
    rt.stream("default").synchronize();
  }
}

TEST_CASE("a runtime refuses a null device and a caller's scheduler with virtual time") {
  CHECK_THROWS_WITH_AS(swp::Runtime(std::unique_ptr<swp::Device>{}),
                       doctest::Contains("the device is null"), std::invalid_argument);
  CHECK_THROWS_AS(swp::Runtime(std::make_unique<swp::SimScheduler>()), std::invalid_argument);
  CHECK_THROWS_AS(
      swp::Runtime(std::make_unique<swp::ThreadPoolScheduler>(1), {.backend = swp::Backend::sim}),
      std::invalid_argument);
}

TEST_CASE("backend names round-trip for the backends this build has") {
  for (auto backend : {swp::Backend::host, swp::Backend::sim, swp::Backend::cuda}) {
    CAPTURE(swp::backend_name(backend));
    swp::Backend parsed{};
    const bool compiled = swp::backend_compiled(swp::backend_name(backend));
    CHECK(swp::parse_backend(swp::backend_name(backend), parsed) == compiled);
    if (compiled) CHECK(parsed == backend);
  }
  swp::Backend parsed{};
  CHECK_FALSE(swp::parse_backend("gpu", parsed));
}

TEST_CASE("a runtime's on_thread_start runs on every thread it starts, before its work") {
  using Role = swp::ThreadStart::Role;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::pair<Role, std::string>> calls;
  const swp::ThreadStartHook hook = [&](const swp::ThreadStart& t) {
    std::lock_guard lock(mutex);
    calls.emplace_back(t.role, std::string(t.name));
    changed.notify_all();
  };
  const auto wait_for = [&](std::size_t n) {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, 60s, [&] { return calls.size() >= n; });  // a guard against a hang
    return calls;
  };
  using Calls = std::vector<std::pair<Role, std::string>>;

  SUBCASE("its own pool, a dedicated lane, a stream, the timers") {
    swp::Runtime rt({.workers = 1, .dedicated_lanes = {"io"}, .on_thread_start = hook});
    CHECK(wait_for(1) == Calls{{Role::worker, ""}});
    rt.lane("io");
    swp::Stream& copy = rt.stream("copy");
    copy.enqueue([] {});  // a host stream's thread starts with its first item
    copy.synchronize();
    std::atomic<bool> fired{false};
    rt.timers().schedule(swp::Clock::now(), [&] { fired.store(true); });
    auto seen = wait_for(4);
    std::sort(seen.begin(), seen.end());
    CHECK(seen ==
          Calls{{Role::worker, ""}, {Role::lane, "io"}, {Role::stream, "copy"}, {Role::timer, ""}});
    while (!fired.load()) std::this_thread::yield();
  }
  SUBCASE("a caller's scheduler: the streams' threads still") {
    swp::Runtime rt(std::make_unique<swp::ThreadPoolScheduler>(0), {.on_thread_start = hook});
    swp::Stream& compute = rt.stream("compute");
    compute.enqueue([] {});
    compute.synchronize();
    CHECK(wait_for(1) == Calls{{Role::stream, "compute"}});
  }
  SUBCASE("a host stream nothing is queued on starts no thread") {
    swp::Runtime rt({.workers = 0, .on_thread_start = hook});
    swp::Stream& idle = rt.stream("idle");
    idle.synchronize();  // nothing to wait for
    swp::Event event;
    CHECK(event.reached(idle.record(event)));  // a record on an empty stream completes at once
    swp::Stream& busy = rt.stream("busy");
    busy.enqueue([] {});
    busy.synchronize();
    CHECK(wait_for(1) == Calls{{Role::stream, "busy"}});
    std::lock_guard lock(mutex);
    CHECK(calls.size() == 1);  // none for "idle"
  }
  SUBCASE("sim starts no threads for its streams") {
    swp::Runtime rt({.backend = swp::Backend::sim, .on_thread_start = hook});
    rt.stream("compute");
    std::lock_guard lock(mutex);
    CHECK(calls.empty());
  }
}

TEST_CASE("every thread a runtime starts is bound to its device before its hook and its work") {
  using Role = swp::ThreadStart::Role;
  constexpr int ordinal = 3;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::tuple<Role, std::string, int>> starts;  // role, name, ordinal in the hook
  std::vector<int> ran_on;  // the ordinal of each thread (not the caller's) a body ran on
  const swp::ThreadStartHook hook = [&](const swp::ThreadStart& t) {
    std::lock_guard lock(mutex);
    starts.emplace_back(t.role, std::string(t.name), bound_ordinal);
    changed.notify_all();
  };
  swp::Runtime rt(std::make_unique<PlacedDevice>(ordinal),
                  {.workers = 2, .dedicated_lanes = {"submit"}, .on_thread_start = hook});
  const auto caller = std::this_thread::get_id();
  const auto note = [&] {
    if (std::this_thread::get_id() == caller) return;  // progress()'s caller helps: not ours
    std::lock_guard lock(mutex);
    ran_on.push_back(bound_ordinal);
  };
  swp::Plan<Ctx> plan;
  plan.add("Pool", [&](Ctx&) { note(); }, {.stage = 0});
  plan.add("Lane",
           [&](Ctx&, swp::TaskScope& scope) {
             note();
             scope.enqueue([&] { note(); });  // on the host stream's own thread
           },
           {.stage = 0, .stream = "copy", .thread_group = "submit"});
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
  CHECK(pipe.run(std::vector<int>(16, 1)).iterations == 16);
  std::atomic<bool> fired{false};
  rt.timers().schedule(swp::Clock::now(), [&] { fired.store(true); });
  {
    std::unique_lock lock(mutex);
    // 2 workers, the lane, the stream, the timer thread; a guard against a hang.
    changed.wait_for(lock, 60s, [&] { return starts.size() >= 5; });
    std::sort(starts.begin(), starts.end());
    using Start = std::tuple<Role, std::string, int>;
    CHECK(starts == std::vector<Start>{{Role::worker, "", ordinal},
                                       {Role::worker, "", ordinal},
                                       {Role::lane, "submit", ordinal},
                                       {Role::stream, "copy", ordinal},
                                       {Role::timer, "", ordinal}});
    CHECK_FALSE(ran_on.empty());  // the lane's bodies and the stream's callables at least
    CHECK(std::count(ran_on.begin(), ran_on.end(), ordinal) ==
          static_cast<std::ptrdiff_t>(ran_on.size()));
  }
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!fired.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  CHECK(fired.load());
}

TEST_CASE_TEMPLATE("a plan's stream priorities reach the runtime's streams, on host and sim", Pipe,
                   swp::DataFlowPipeline<Ctx>, swp::ClockPipeline<Ctx>) {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    swp::Plan<Ctx> plan;
    plan.add("H2D", [](Ctx&, swp::TaskScope& scope) { scope.device_work(100us); },
             {.stage = 0, .stream = "memcpy", .stream_priority = -1});
    plan.add("Dist", [](Ctx&, swp::TaskScope& scope) { scope.device_work(100us); },
             {.stage = 1, .stream = "data_dist", .stream_priority = -1});
    // On data_dist through an alias, giving no priority of its own.
    plan.add("Emb", [](Ctx&, swp::TaskScope& scope) { scope.device_work(50us); },
             {.stage = 1, .stream = "emb_lookup"});
    plan.add("Fwd", [](Ctx&, swp::TaskScope& scope) { scope.device_work(200us); }, {.stage = 2});
    plan.stream_aliases = {{"emb_lookup", "data_dist"}};
    plan.intra_iter_deps = {{"Dist", "H2D"}, {"Emb", "Dist"}, {"Fwd", "Emb"}};
    std::unique_ptr<Pipe> pipe;
    if constexpr (std::is_same_v<Pipe, swp::ClockPipeline<Ctx>>) {
      pipe = std::make_unique<Pipe>(rt, plan);
    } else {
      pipe = std::make_unique<Pipe>(rt, plan, 3);
    }
    CHECK(pipe->run(std::vector<int>(6, 0)).iterations == 6);
    CHECK(rt.stream("memcpy").priority() == -1);
    CHECK(rt.stream("data_dist").priority() == -1);
    CHECK(rt.stream("default").priority() == 0);
  }
}

TEST_CASE("a stream's priority is fixed when it is made: another is refused, naming both") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  CHECK(rt.stream("memcpy", -1).priority() == -1);
  CHECK(&rt.stream("memcpy", -1) == &rt.stream("memcpy"));  // same, or none asked: that stream
  CHECK_THROWS_WITH_AS(rt.stream("memcpy", 0),
                       "Runtime: stream 'memcpy' was made with priority -1, now asked for with "
                       "priority 0 (a stream's priority is fixed when it is made: make the "
                       "pipeline whose plan sets it before using the stream)",
                       std::invalid_argument);
  // A stream used before the pipeline whose plan gives it a priority: the engine says so.
  rt.stream("data_dist");
  swp::Plan<Ctx> plan;
  plan.add("Dist", [](Ctx&) {}, {.stage = 0, .stream = "data_dist", .stream_priority = -1});
  CHECK_THROWS_WITH_AS(swp::DataFlowPipeline<Ctx>(rt, plan, 2),
                       doctest::Contains("stream 'data_dist' was made with priority 0"),
                       std::invalid_argument);
}

TEST_CASE("a plan giving one stream two priorities is refused by the engines, naming both tasks") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("H2D", [](Ctx&) {}, {.stage = 0, .stream = "memcpy", .stream_priority = -1});
  plan.add("Prefetch", [](Ctx&) {}, {.stage = 0, .stream = "memcpy", .stream_priority = 0});
  try {
    swp::DataFlowPipeline<Ctx> pipe(rt, plan, 2);
    FAIL("the engine accepted two priorities for one stream");
  } catch (const swp::PlanError& e) {
    CHECK(e.breaks(swp::PlanRule::stream_priority));
    CHECK(std::string(e.what()).find("tasks 'H2D' and 'Prefetch' run on stream 'memcpy'") !=
          std::string::npos);
  }
}

TEST_CASE("sleep_for waits on the runtime's clock without a thread; a past deadline is at once") {
  for (auto backend : {swp::Backend::host, swp::Backend::sim}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    const auto start = rt.now();
    auto sleeps = [&]() -> swp::Co<void> {
      co_await rt.sleep_for(std::chrono::milliseconds(20));
      co_await rt.sleep_for(std::chrono::milliseconds(-1));  // nothing to wait for
      co_await rt.sleep_until(start);                         // past
    };
    if (backend == swp::Backend::sim) {
      // Virtual time moves while someone drives the scheduler.
      std::atomic<bool> done{false};
      sleeps().start_detached(
          nullptr,
          [](void* flag, std::exception_ptr&) noexcept {
            static_cast<std::atomic<bool>*>(flag)->store(true);
          },
          &done);
      CHECK(rt.scheduler().drive_until([&] { return done.load(); }, swp::Clock::time_point::max()));
      CHECK(rt.now() - start == std::chrono::milliseconds(20));  // virtual: exactly
    } else {
      swp::sync_wait(sleeps());
      CHECK(rt.now() - start >= std::chrono::milliseconds(20));  // never early
    }
  }
}

TEST_CASE("sleep_for ends early with Cancelled when its token stops, before or during the sleep") {
  swp::Runtime rt({.workers = 1});
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(swp::sync_wait([&]() -> swp::Co<void> {
                         co_await rt.sleep_for(std::chrono::hours(1), stop.get_token());
                       }()),
                       "sleep stopped", swp::Cancelled);
  stopper.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::minutes(10));  // not the hour
  // A token stopped already: at once.
  CHECK_THROWS_AS(swp::sync_wait([&]() -> swp::Co<void> {
                    co_await rt.sleep_for(std::chrono::hours(1), stop.get_token());
                  }()),
                  swp::Cancelled);
}

TEST_CASE("many sleeps racing their tokens each end exactly once") {
  // The timer and the stop race at every offset: each sleep resumes once, by one of them.
  swp::Runtime rt({.workers = 2});
  for (int round = 0; round < 200; ++round) {
    std::stop_source stop;
    std::atomic<int> ended{0};
    std::thread stopper([&, round] {
      std::this_thread::sleep_for(std::chrono::microseconds(round % 50 * 20));
      stop.request_stop();
    });
    try {
      swp::sync_wait([&]() -> swp::Co<void> {
        co_await rt.sleep_for(std::chrono::microseconds(round % 40 * 25), stop.get_token());
        ++ended;
      }());
    } catch (const swp::Cancelled&) {
      ++ended;
    }
    stopper.join();
    CHECK(ended.load() == 1);
  }
}

}  // namespace test_runtime
