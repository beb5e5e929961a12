#include "swp/device/host_device.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>

#include "swp/device/sim_device.hpp"

namespace {
using namespace std::chrono_literals;

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

TEST_CASE("a host stream refuses to wait for an event of another backend") {
  struct Foreign final : swp::DeviceEvent {
    [[nodiscard]] bool query() const noexcept override { return true; }
  } foreign;
  swp::HostDevice device;
  auto s = device.make_stream("x");
  CHECK_THROWS_AS(s->wait(foreign), std::invalid_argument);
}
