#include "swp/device/host_device.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "swp/device/sim_device.hpp"

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

}  // namespace test_host_device
