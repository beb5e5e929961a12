#include "swp/async/fiber_bridge.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/started.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"

namespace {

using namespace std::chrono_literals;

int plain_sum(int n) {
  int s = 0;
  for (int i = 1; i <= n; ++i) s += i;
  return s;
}

}  // namespace

TEST_CASE("on_fiber runs a plain callable and completes with its value or exception") {
  CHECK(swp::sync_wait(swp::on_fiber([] { return plain_sum(10); })) == 55);
  CHECK_THROWS_WITH_AS(swp::sync_wait(swp::on_fiber([]() -> int { throw std::runtime_error("boom"); })),
                       "boom", std::runtime_error);
  CHECK_THROWS_AS(swp::blocking_await(swp::Promise<int>().get_future()), std::logic_error);
}

TEST_CASE("blocking_await parks the fiber until the future completes, on another thread") {
  swp::Promise<int> p;
  swp::Promise<> unit;
  std::vector<std::string> steps;
  swp::test::Started run(swp::on_fiber([&] {
    steps.push_back("waiting");
    const int v = swp::blocking_await(p.get_future());
    swp::blocking_await(unit.get_future());  // a void awaitable
    steps.push_back("got " + std::to_string(v));
  }));
  // The fiber parked: this thread is free again, and the run has not finished.
  CHECK_FALSE(run.finished);
  CHECK(steps == std::vector<std::string>{"waiting"});
  std::thread([&] {
    p.set_value(41);
    unit.set_value();
  }).join();
  CHECK(run.finished);  // resumed inline by the completing thread, then finished
  CHECK_FALSE(run.error);
  CHECK(steps == std::vector<std::string>{"waiting", "got 41"});
}

TEST_CASE("a failed awaitable rethrows inside the fiber") {
  swp::Promise<int> p;
  std::string caught = "no error";
  swp::test::Started run(swp::on_fiber([&] {
    try {
      swp::blocking_await(p.get_future());
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  }));
  p.set_error(std::make_exception_ptr(std::runtime_error("producer failed")));
  CHECK(run.finished);
  CHECK_FALSE(run.error);
  CHECK(caught == "producer failed");
}

namespace {

struct Fields {
  int doubled = 0;
};
using Ctx = swp::IterContext<int, Fields>;

// Load (lane io) produces a value; Double (lane compute) is a plain blocking callable that
// reads it with blocking_await. On the sim backend everything runs on one thread, so a wait
// that blocked the thread could never be satisfied: only a parked fiber lets Load run.
swp::Plan<Ctx> blocking_plan() {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<int> {
    co_await scope.cpu_work(50us);
    co_return ctx.batch * 10;
  }, {.stage = 0, .thread_group = "io"});
  auto twice = plan.add("Double", swp::blocking([load](Ctx& ctx) {
    ctx.doubled = 2 * swp::blocking_await(ctx.get(load));
  }), {.stage = 0, .thread_group = "compute"});
  plan.intra_iter_deps = {{twice, load}};
  return plan;
}

}  // namespace

TEST_CASE_TEMPLATE("blocking task bodies run on fibers in both engines", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  for (auto backend : {swp::Backend::sim, swp::Backend::host}) {
    CAPTURE(swp::backend_name(backend));
    swp::Runtime rt({.backend = backend, .workers = 1});
    auto pipe = Engine::template make<Ctx>(rt, blocking_plan(), 2);
    std::vector<int> doubled;
    pipe->on_retire([&](const Ctx& ctx) { doubled.push_back(ctx.doubled); });
    pipe->run(std::vector<int>{1, 2, 3, 4, 5});
    CHECK(doubled == std::vector<int>{20, 40, 60, 80, 100});
  }
}
