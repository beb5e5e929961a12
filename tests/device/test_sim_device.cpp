#include "swp/device/sim_device.hpp"

#include <doctest/doctest.h>

#include <chrono>

namespace test_sim_device {  // each test file's names apart (unity builds)

namespace {
using namespace std::chrono_literals;
}

TEST_CASE("sim streams advance virtual time only and are deterministic") {
  auto run = [] {
    swp::SimScheduler sim;
    swp::SimDevice device(sim);
    CHECK(device.backend() == "sim");
    auto a = device.make_stream("a");
    auto b = device.make_stream("b");
    swp::Event e;
    a->enqueue_work(300us);
    a->record(e);
    b->enqueue_work(100us);
    b->wait(e);
    b->enqueue_work(1000us);
    b->synchronize();
    return sim.elapsed();
  };
  const auto first = run();
  CHECK(first == 1300us);  // b idles from 100 to 300, then works 1000
  CHECK(run() == first);
}

}  // namespace test_sim_device
