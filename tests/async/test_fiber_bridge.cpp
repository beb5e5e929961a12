#include "swp/async/fiber_bridge.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/engines.hpp"
#include "support/started.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"

namespace test_fiber_bridge {  // each test file's names apart (unity builds)

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

TEST_CASE("destroying an on_fiber Co parked on a future unwinds it; completing the future later "
          "is safe") {
  swp::Promise<int> p;
  bool unwound = false;
  int got = 0;
  {
    struct Unwound {
      bool* flag;
      ~Unwound() { *flag = true; }
    };
    swp::test::Started run(swp::on_fiber([&unwound, &got, f = p.get_future()] {
      Unwound guard{&unwound};
      got = swp::blocking_await(f) + 1;
    }));
    CHECK_FALSE(run.finished);
  }  // destroyed while the fiber is parked
  CHECK(unwound);
  p.set_value(41);  // used to resume the freed await frame (the waiter stayed linked)
  auto read = [f = p.get_future()] { return swp::blocking_await(f); };
  CHECK(swp::sync_wait(swp::on_fiber(read)) == 41);
  CHECK(got == 0);
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

namespace {

// One line of /proc/self/maps: [lo, hi) and its permissions ("rw-p", "---p", ...).
struct Mapping {
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
  std::string perms;
};

std::vector<Mapping> read_maps() {
  std::vector<Mapping> maps;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range;
    Mapping m;
    fields >> range >> m.perms;
    const auto dash = range.find('-');
    m.lo = std::stoull(range.substr(0, dash), nullptr, 16);
    m.hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    maps.push_back(m);
  }
  return maps;
}

// Where the stack of the calling fiber lies: the mapping holding this frame, how far the frame
// is above the mapping's start, and the mapping just below it (if any is adjacent).
struct StackView {
  std::size_t below_frame = 0;  // bytes of the mapping under this frame
  std::string perms;
  std::string guard_perms;  // permissions of the adjacent mapping below, "" when none
  std::size_t guard_size = 0;
};

[[gnu::noinline]] StackView view_own_stack() {
  // The real frame address: under ASan a local's address may be on its fake stack.
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  StackView view;
  const auto maps = read_maps();
  for (const auto& m : maps) {
    if (frame < m.lo || frame >= m.hi) continue;
    view.below_frame = frame - m.lo;
    view.perms = m.perms;
    for (const auto& g : maps) {
      if (g.hi != m.lo) continue;
      view.guard_perms = g.perms;
      view.guard_size = g.hi - g.lo;
    }
  }
  return view;
}

// Touches `n` bytes of stack one page at a time, so they are really used.
[[gnu::noinline]] std::size_t use_stack(std::size_t n) {
  constexpr std::size_t chunk = 64 * 1024;
  volatile char buffer[chunk];
  for (std::size_t i = 0; i < chunk; i += 4096) buffer[i] = static_cast<char>(i);
  buffer[chunk - 1] = 1;
  const std::size_t deeper = n <= chunk ? 0 : use_stack(n - chunk);
  // Read back once the deeper frames ran below this one: the buffer kept its bytes.
  if (buffer[chunk - 1] != 1) return 0;
  return chunk + deeper;
}

}  // namespace

TEST_CASE("a fiber runs on a stack of the configured size with a guard page below it") {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  // The frames above the body (Boost.Context's record, the entry, the bridge) take a little of
  // the top of the stack; everything else must lie below the body's frame, and no more.
  constexpr std::size_t frames_above = 32 * 1024;
  for (const std::size_t size : {swp::default_fiber_stack, std::size_t{1} << 20}) {
    CAPTURE(size);
    StackView view = swp::sync_wait(swp::on_fiber(view_own_stack, size));
    CHECK(view.perms.starts_with("rw"));
    CHECK(view.below_frame < size);
    CHECK(view.below_frame > size - frames_above);
    // A PROT_NONE page right under the usable stack: an overflow faults instead of writing
    // into whatever memory lies below.
    CHECK(view.guard_perms == "---p");
    CHECK(view.guard_size >= page);
  }
  SUBCASE("the same through swp::blocking") {
    auto body = swp::blocking([] { return view_own_stack(); }, std::size_t{512} * 1024);
    StackView view = swp::sync_wait(body());
    CHECK(view.below_frame < 512 * 1024);
    CHECK(view.below_frame > 512 * 1024 - frames_above);
    CHECK(view.guard_perms == "---p");
  }
}

TEST_CASE("a blocking body can use most of a configured larger stack") {
  constexpr std::size_t size = std::size_t{2} << 20;
  CHECK(swp::sync_wait(swp::on_fiber([] { return use_stack(1536 * 1024); }, size)) >=
        1536 * 1024);
}

TEST_CASE("destroying a parked fiber unwinds its frames and keeps no state") {
  struct Counted {
    int* destroyed;
    ~Counted() { ++*destroyed; }
  };
  swp::Promise<int> never;  // outlives the run: its waiter list is not touched again
  int destroyed = 0;
  bool caught_by_body = false;
  {
    swp::test::Started run(swp::on_fiber([&] {
      Counted local{&destroyed};
      try {
        swp::blocking_await(never.get_future());
      } catch (const std::exception&) {
        caught_by_body = true;  // the unwinding is no std::exception: bodies cannot swallow it
      }
    }));
    CHECK_FALSE(run.finished);
  }
  CHECK(destroyed == 1);
  CHECK_FALSE(caught_by_body);
  CHECK(swp::detail::current_fiber() == nullptr);
  // The bridge still works on this thread afterwards.
  CHECK(swp::sync_wait(swp::on_fiber([] { return plain_sum(4); })) == 10);
}

TEST_CASE("a body that swallows the unwinding of its fiber cannot wait again") {
  swp::Promise<int> never;
  int refused = 0;
  bool finished_body = false;
  {
    swp::test::Started run(swp::on_fiber([&] {
      try {
        swp::blocking_await(never.get_future());
      } catch (...) {  // swallows the unwinding
      }
      try {
        swp::blocking_await(never.get_future());
      } catch (...) {
        ++refused;  // thrown at once: the fiber does not park again
      }
      finished_body = true;
    }));
    CHECK_FALSE(run.finished);
  }
  CHECK(refused == 1);
  CHECK(finished_body);
}

TEST_CASE("a fiber stack below the minimum is refused with the size named") {
  const std::string message =
      "swp: fiber stack size 1000 bytes is below the minimum of 16384 (swp::min_fiber_stack)";
  CHECK_THROWS_WITH_AS(swp::sync_wait(swp::on_fiber([] { return 1; }, 1000)), message.c_str(),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::blocking([] {}, 1000), message.c_str(), std::invalid_argument);
  CHECK(swp::sync_wait(swp::on_fiber([] { return 1; }, swp::min_fiber_stack)) == 1);
}

}  // namespace test_fiber_bridge
