#include "swp/device/host_device.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "swp/device/sim_device.hpp"
#include "swp/device/stream_limit_error.hpp"

namespace test_host_device {  // each test file's names apart (unity builds)

namespace {
using namespace std::chrono_literals;

// A stream can be made to wait for an E.
template <class E>
concept WaitsFor = requires(swp::Stream& s, const E& e) { s.wait(e); };

struct Ends final : swp::DeviceObserver {
  swp::Clock::time_point first{}, last{};
  int count = 0;
  void device_work(const swp::Stream&, const swp::DeviceWork& w) noexcept override {
    if (count++ == 0) first = w.start;
    last = w.end;
  }
};
}  // namespace

TEST_CASE("host streams emulate device time without drifting with sleep overshoot") {
  swp::HostDevice device;
  CHECK(device.backend() == "host");
  auto s = device.make_stream("compute");
  Ends ends;
  s->set_observer(&ends);
  // Hold the stream behind a gate until all items are queued, however slowly this thread
  // queues them (sanitizers), then open it.
  swp::Event gate;
  const auto generation = gate.arm(nullptr);
  s->wait(gate, generation);
  for (int i = 0; i < 100; ++i) s->enqueue_work(100us);
  const auto opened = swp::Clock::now();
  gate.complete(generation, opened);
  s->synchronize();
  // The emulated clock says exactly 100 x 100 us after the gate opened, however late each
  // sleep woke; and no completion is reported before its emulated end.
  CHECK(ends.count == 100);
  CHECK(ends.first == opened);
  CHECK(ends.last - ends.first == 10ms);
  CHECK(swp::Clock::now() >= ends.last);
}

TEST_CASE("a stream's wait takes swp::Event itself, and orders after another device's record") {
  // One event type for every backend: a wait on anything else does not compile (there is
  // nothing to downcast at run time).
  struct Foreign {};
  static_assert(!WaitsFor<Foreign>);
  static_assert(WaitsFor<swp::Event>);

  swp::HostDevice first;
  swp::HostDevice second;
  auto producer = first.make_stream("producer");
  auto consumer = second.make_stream("consumer");
  swp::Event produced;
  std::atomic<bool> release{false};
  producer->enqueue([&] {
    while (!release.load()) std::this_thread::yield();
  });
  producer->record(produced);
  consumer->wait(produced);
  bool saw_produced = false;
  consumer->enqueue([&] { saw_produced = produced.query(); });
  release.store(true);
  consumer->synchronize();
  CHECK(saw_produced);
}

TEST_CASE("a host device's stream limit throws StreamLimitError, a std::length_error") {
  // Its own type, so that a caller (swp run's --max-host-streams hint) tells it apart from any
  // other std::length_error; still a std::length_error, so handlers of that catch it too.
  static_assert(std::is_base_of_v<std::length_error, swp::StreamLimitError>);
  swp::HostDevice device({.max_streams = 1});
  const auto only = device.make_stream("only");
  CHECK_THROWS_AS(device.make_stream("more"), std::length_error);
  try {
    (void)device.make_stream("more");
    FAIL("make_stream past max_streams returned");
  } catch (const swp::StreamLimitError& e) {
    CHECK(e.stream() == "more");
    const std::string what = e.what();
    // "1 stream", not "1 streams": the count picks the noun's number.
    CHECK(what.starts_with(
        "host device: cannot make stream 'more': the device has 1 stream, its limit "));
  }
  CHECK(device.streams() == 1);
}

TEST_CASE("a host device refuses a stream past max_streams, naming it, the count and the option") {
  swp::HostDevice device({.max_streams = 4});
  CHECK(device.options().max_streams == 4);
  std::vector<std::unique_ptr<swp::Stream>> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(device.make_stream("s" + std::to_string(i)));
  CHECK(device.streams() == 4);
  CHECK(device.streams_left() == 0);
  // The streams under the limit work, each on its own thread.
  std::atomic<int> ran{0};
  for (auto& s : streams) s->enqueue([&] { ++ran; });
  for (auto& s : streams) s->synchronize();
  CHECK(ran.load() == 4);
  CHECK(device.stream_threads() <= 4);

  CHECK_THROWS_WITH_AS(device.make_stream("s4"),
                       doctest::Contains("cannot make stream 's4': the device has 4 streams, its "
                                         "limit (HostDeviceOptions::max_streams, on a Runtime "
                                         "RuntimeOptions::max_host_streams"),
                       std::length_error);
  CHECK(device.streams() == 4);  // the refused one is not counted
  streams.pop_back();            // a stream gone makes room for another
  CHECK(device.streams() == 3);
  CHECK(device.streams_left() == 1);
  auto again = device.make_stream("s4");
  again->enqueue([&] { ++ran; });
  again->synchronize();
  CHECK(ran.load() == 5);
  CHECK_THROWS_AS(swp::HostDevice({.max_streams = 0}), std::invalid_argument);
}

TEST_CASE("a host stream's thread leaves after idle_exit and the next item starts another") {
  std::atomic<int> starts{0};
  swp::HostDevice device({.idle_exit = 1ms});
  device.on_thread_start([&](const swp::ThreadStart& t) {
    if (t.role == swp::ThreadStart::Role::stream && t.name == "copy") ++starts;
  });
  auto s = device.make_stream("copy");
  CHECK(device.stream_threads() == 0);  // none before the first item
  std::atomic<int> ran{0};
  s->enqueue([&] { ++ran; });
  s->synchronize();
  CHECK(ran.load() == 1);
  CHECK(starts.load() == 1);
  // Idle for idle_exit, the thread leaves; a guard against a hang.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (device.stream_threads() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  REQUIRE(device.stream_threads() == 0);
  // Everything queued afterwards runs, in order, on a new thread. The first item holds the
  // thread until the rest is queued: on a busy machine this thread may lose its CPU for longer
  // than idle_exit between two enqueues, and the new thread would leave and start again.
  Ends ends;
  s->set_observer(&ends);
  swp::Event done;
  std::atomic<bool> queued_all{false};
  s->enqueue([&] {
    ++ran;
    while (!queued_all.load()) std::this_thread::sleep_for(100us);
  });
  s->enqueue_work(100us);
  s->record(done);
  queued_all.store(true);
  const auto queued = std::chrono::steady_clock::now();
  while (!done.query() && std::chrono::steady_clock::now() < queued + 60s)
    std::this_thread::sleep_for(1ms);
  REQUIRE(done.query());  // a stream whose thread left and never came back would hang here
  s->synchronize();
  CHECK(ran.load() == 2);
  CHECK(ends.count == 2);
  CHECK(starts.load() == 2);
}

}  // namespace test_host_device
