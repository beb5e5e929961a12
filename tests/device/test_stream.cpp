#include "swp/device/stream.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/alloc_counter.hpp"
#include "swp/device/device_fault.hpp"
#include "swp/device/host_device.hpp"
#include "swp/device/sim_device.hpp"

namespace test_stream {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;

struct Recorder final : swp::DeviceObserver {
  struct Entry {
    std::string stream;
    swp::DeviceWork work;
  };
  std::mutex mutex;
  std::vector<Entry> entries;
  void device_work(const swp::Stream& s, const swp::DeviceWork& w) noexcept override {
    std::lock_guard lock(mutex);
    entries.push_back({s.name(), w});
  }
  const swp::DeviceWork& find(std::uint64_t tag) {
    for (auto& e : entries)
      if (e.work.tag.task == tag) return e.work;
    FAIL("no work with tag ", tag);
    return entries.front().work;
  }
};

// Both backends behind one interface, so every stream property is checked on each.
struct HostBackend {
  swp::HostDevice device;
  void settle(swp::Stream& s) { s.synchronize(); }
  // Waits at most 10 s for `s` to run what it was given: a marker recorded behind it, polled,
  // before the synchronize that then returns at once. False on the deadline.
  bool settle_within(swp::Stream& s, swp::Event& marker) {
    s.record(marker);
    const auto deadline = swp::Clock::now() + std::chrono::seconds(10);
    while (!marker.query()) {
      if (swp::Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    s.synchronize();
    return true;
  }
  swp::Clock::time_point now() const { return swp::Clock::now(); }
};
struct SimBackend {
  swp::SimScheduler sim;
  swp::SimDevice device{sim};
  void settle(swp::Stream& s) { s.synchronize(); }
  // Virtual time: synchronize returns, or throws when the stream can never drain.
  bool settle_within(swp::Stream& s, swp::Event&) {
    s.synchronize();
    return true;
  }
  swp::Clock::time_point now() const { return sim.now(); }
};

// Counts work items and makes the threads that run them (a host stream's worker) count their
// allocations while an AllocationCount is armed.
struct TrackingObserver final : swp::DeviceObserver {
  std::atomic<int> items{0};
  void device_work(const swp::Stream&, const swp::DeviceWork&) noexcept override {
    swp::test::track_allocations_on_this_thread();
    ++items;
  }
};

}  // namespace

TEST_CASE_TEMPLATE("a stream runs its work in order, back to back", B, HostBackend, SimBackend) {
  B backend;
  Recorder rec;
  auto s = backend.device.make_stream("compute");
  s->set_observer(&rec);
  std::size_t first = 0;  // the first entry of the five work items
  std::atomic<bool> queued{false};
  if constexpr (std::is_same_v<B, HostBackend>) {
    // The host stream waits here until all five are queued: an item starts at its enqueue time
    // when the stream is idle by then, and the enqueuing thread may be delayed between items
    // (a preemption; the stream's worker thread starting with its first item).
    s->enqueue([&] {
      while (!queued.load()) std::this_thread::yield();
    });
    first = 1;
  }
  // Both fields pass through whole, far beyond 16 bits each.
  for (std::uint64_t tag = 1; tag <= 5; ++tag)
    s->enqueue_work(200us, {.task = (1ull << 40) + tag, .iter = (1ll << 50) + static_cast<std::int64_t>(tag)});
  queued = true;
  backend.settle(*s);
  REQUIRE(rec.entries.size() == first + 5);
  for (std::size_t i = 0; i < 5; ++i) {
    const swp::DeviceWork& work = rec.entries[first + i].work;
    CHECK(work.tag ==
          swp::WorkTag{.task = (1ull << 40) + i + 1, .iter = (1ll << 50) + static_cast<std::int64_t>(i) + 1});
    CHECK(work.end - work.start == 200us);
    if (i > 0) CHECK(work.start == rec.entries[first + i - 1].work.end);
  }
}

TEST_CASE_TEMPLATE("a stream waiting for another stream's event starts after it", B, HostBackend,
                   SimBackend) {
  B backend;
  Recorder rec;
  auto producer = backend.device.make_stream("memcpy");
  auto consumer = backend.device.make_stream("default");
  producer->set_observer(&rec);
  consumer->set_observer(&rec);
  swp::Event copied;
  producer->enqueue_work(1000us, {.task = 1});
  producer->record(copied);
  consumer->wait(copied);
  consumer->enqueue_work(100us, {.task = 2});
  backend.settle(*consumer);
  backend.settle(*producer);
  CHECK(rec.find(2).start >= rec.find(1).end);
  CHECK(copied.query());
}

TEST_CASE_TEMPLATE("re-recording an event does not confuse a wait for the earlier generation", B,
                   HostBackend, SimBackend) {
  B backend;
  Recorder rec;
  auto a = backend.device.make_stream("a");
  auto b = backend.device.make_stream("b");
  a->set_observer(&rec);
  b->set_observer(&rec);
  swp::Event e;
  a->enqueue_work(100us, {.task = 1});
  a->record(e);
  b->wait(e);  // waits for generation 1
  b->enqueue_work(50us, {.task = 2});
  a->enqueue_work(2000us, {.task = 3});
  a->record(e);  // generation 2: b must not wait for this one
  backend.settle(*b);
  backend.settle(*a);
  CHECK(rec.find(2).start >= rec.find(1).end);
  CHECK(rec.find(2).end <= rec.find(3).end);
}

TEST_CASE("a sim stream waiting for an event nobody records can never drain") {
  swp::Event never;  // declared first: events outlive the streams that wait for them
  swp::SimScheduler sim;
  swp::SimDevice device(sim);
  auto a = device.make_stream("a");
  auto b = device.make_stream("b");
  never.arm(a.get());  // armed by hand: no stream will complete it
  b->wait(never);
  b->enqueue_work(10us);
  CHECK_THROWS_WITH_AS(b->synchronize(), doctest::Contains("can never drain"), std::runtime_error);
}

TEST_CASE_TEMPLATE("streams queue work, records and waits without allocating after warm-up", B,
                   HostBackend, SimBackend) {
  B backend;
  TrackingObserver observer;
  auto a = backend.device.make_stream("a");
  auto b = backend.device.make_stream("b");
  a->set_observer(&observer);
  b->set_observer(&observer);
  swp::Event gate, ping, pong, a_done, b_done;
  constexpr int cycles = 100;
  // The streams play ping-pong behind a gate: everything of a phase is queued before either
  // runs, so every phase queues exactly as many items as the warm-up phase did (the rings
  // keep the capacity they grew to), and both streams' waits really block.
  auto phase = [&] {
    const auto g = gate.arm(nullptr);
    a->wait(gate, g);
    b->wait(gate, g);
    for (int i = 0; i < cycles; ++i) {
      a->enqueue_work(std::chrono::microseconds(1), {.task = 1});
      a->record(ping);
      b->wait(ping);
      b->enqueue_work(std::chrono::microseconds(1), {.task = 2});
      b->record(pong);
      a->wait(pong);
    }
    gate.complete(g, backend.now());
    const bool a_settled = backend.settle_within(*a, a_done);
    return backend.settle_within(*b, b_done) && a_settled;
  };
  REQUIRE(phase());  // warm-up
  REQUIRE(observer.items == 2 * cycles);
  std::size_t allocations = 0;
  bool settled = false;
  {
    swp::test::AllocationCount count;
    settled = phase();
    allocations = count.stop();
  }
  REQUIRE(settled);
  CHECK(observer.items == 4 * cycles);
  CHECK(allocations == 0);
}

TEST_CASE_TEMPLATE("a callable runs in stream order, between work items, and events follow it", B,
                   HostBackend, SimBackend) {
  B backend;
  Recorder rec;
  auto s = backend.device.make_stream("compute");
  s->set_observer(&rec);
  std::vector<int> ran;  // written by the stream's thread only, read after synchronize
  swp::Event after_call;
  s->enqueue_work(300us, {.task = 1});
  s->enqueue([&ran] { ran.push_back(2); }, 100us, {.task = 2});
  const auto generation = s->record(after_call);
  s->enqueue([&ran] { ran.push_back(3); }, {}, {.task = 3});
  s->enqueue_work(200us, {.task = 4});
  backend.settle(*s);
  CHECK(ran == std::vector<int>{2, 3});
  CHECK(after_call.reached(generation));
  REQUIRE(rec.entries.size() == 4);
  // In order, each starting when the one before ended.
  for (std::size_t i = 0; i < 4; ++i) CHECK(rec.entries[i].work.tag.task == i + 1);
  CHECK(rec.find(2).start >= rec.find(1).end);
  CHECK(rec.find(4).start >= rec.find(3).end);
  CHECK(after_call.completed_at(generation) >= rec.find(2).end);
}

TEST_CASE("on sim a callable takes its modelled time and runs at the stream's virtual time") {
  SimBackend backend;
  Recorder rec;
  auto s = backend.device.make_stream("compute");
  s->set_observer(&rec);
  swp::Clock::time_point called_at{};
  const auto t0 = backend.now();
  s->enqueue_work(1ms, {.task = 1});
  s->enqueue([&] { called_at = backend.now(); }, 5ms, {.task = 2});
  backend.settle(*s);
  CHECK(called_at == t0 + 1ms);
  CHECK(rec.find(2).start == t0 + 1ms);
  CHECK(rec.find(2).end == t0 + 6ms);
  CHECK(backend.now() == t0 + 6ms);
}

TEST_CASE("on host a callable runs on the stream's thread, not the caller's") {
  HostBackend backend;
  auto s = backend.device.make_stream("compute");
  std::thread::id ran_on;
  s->enqueue([&ran_on] { ran_on = std::this_thread::get_id(); });
  backend.settle(*s);
  CHECK(ran_on != std::thread::id{});
  CHECK(ran_on != std::this_thread::get_id());
}

TEST_CASE_TEMPLATE("a callable's exception surfaces once from synchronize; the stream goes on", B,
                   HostBackend, SimBackend) {
  B backend;
  auto s = backend.device.make_stream("compute");
  swp::Event after;
  bool later_ran = false;
  s->enqueue([] { throw std::runtime_error("kernel failed"); });
  s->enqueue([] { throw std::runtime_error("second failure"); });
  s->enqueue([&later_ran] { later_ran = true; });
  const auto generation = s->record(after);
  CHECK_THROWS_WITH_AS(s->synchronize(), "kernel failed", std::runtime_error);
  CHECK(later_ran);
  CHECK(after.reached(generation));  // nothing waiting behind the failure hangs
  CHECK_NOTHROW(s->synchronize());   // reported once
}

TEST_CASE("a callable queued from a callable on its own stream runs after it") {
  SimBackend backend;
  auto s = backend.device.make_stream("compute");
  std::vector<int> ran;
  s->enqueue([&] {
    ran.push_back(1);
    s->enqueue([&ran] { ran.push_back(2); }, 1ms);
  }, 2ms);
  const auto t0 = backend.now();
  backend.settle(*s);
  CHECK(ran == std::vector<int>{1, 2});
  CHECK(backend.now() == t0 + 3ms);
}

TEST_CASE_TEMPLATE("a fault is sticky: later work does not run, records fail, waiters fault too", B,
                   HostBackend, SimBackend) {
  B backend;
  auto gpu = backend.device.make_stream("compute");
  auto copy = backend.device.make_stream("memcpy");
  swp::Event before, after, consumed;
  bool before_ran = false, after_ran = false, consumer_ran = false;
  gpu->enqueue([&] { before_ran = true; });
  const auto g_before = gpu->record(before);
  gpu->enqueue_fault("illegal address in kernel 'gather'");
  gpu->enqueue([&] { after_ran = true; });
  gpu->enqueue_work(1ms);
  const auto g_after = gpu->record(after);
  copy->wait(after, g_after);  // waits on work that will never be done
  copy->enqueue([&] { consumer_ran = true; });
  const auto g_consumed = copy->record(consumed);
  CHECK_THROWS_WITH_AS(gpu->synchronize(),
                       "stream 'compute' faulted: illegal address in kernel 'gather'",
                       swp::DeviceFault);
  CHECK_THROWS_AS(copy->synchronize(), swp::DeviceFault);  // the same fault, passed on
  CHECK(before_ran);
  CHECK_FALSE(after_ran);
  CHECK_FALSE(consumer_ran);
  // Every generation completed (nothing hangs); those after the fault say why.
  CHECK(before.reached(g_before));
  CHECK(before.error(g_before) == nullptr);
  REQUIRE(after.reached(g_after));
  REQUIRE(after.error(g_after) != nullptr);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(after.error(g_after)),
                       "stream 'compute' faulted: illegal address in kernel 'gather'",
                       swp::DeviceFault);
  REQUIRE(consumed.reached(g_consumed));
  CHECK(consumed.error(g_consumed) != nullptr);
  // Sticky: an idle faulted stream fails a record at once, and keeps throwing.
  swp::Event later;
  const auto g_later = gpu->record(later);
  CHECK(later.reached(g_later));
  CHECK(later.error(g_later) != nullptr);
  REQUIRE(gpu->fault() != nullptr);
  CHECK(gpu->faulted());
  CHECK_THROWS_AS(gpu->synchronize(), swp::DeviceFault);
  // A wait on a generation that already failed faults the waiting stream too.
  auto late = backend.device.make_stream("late");
  late->wait(after, g_after);
  CHECK_THROWS_AS(late->synchronize(), swp::DeviceFault);
}

TEST_CASE_TEMPLATE(
    "a stream refuses a second observer while one is attached, naming the stream and both",
    B, HostBackend, SimBackend) {
  B backend;
  Recorder first, second;
  auto s = backend.device.make_stream("compute");
  s->set_observer(&first);
  s->set_observer(&first);  // the same one again: fine
  try {
    s->set_observer(&second);
    FAIL("a second observer must not silently replace the first");
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("stream 'compute'") != std::string::npos);
    CHECK(what.find("test_stream::(anonymous namespace)::Recorder at ") != std::string::npos);
    // Both observers, told apart by their addresses.
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%p", static_cast<const void*>(&first));
    std::snprintf(b, sizeof b, "%p", static_cast<const void*>(&second));
    CHECK(what.find(a) != std::string::npos);
    CHECK(what.find(b) != std::string::npos);
  }
  CHECK(s->observer() == &first);  // unchanged
  s->enqueue_work(1us, swp::WorkTag{.task = 7});
  backend.settle(*s);
  CHECK(first.entries.size() == 1);
  CHECK(second.entries.empty());

  s->set_observer(nullptr);  // detached: now the second may come
  s->set_observer(&second);
  CHECK(s->observer() == &second);
  s->enqueue_work(1us, swp::WorkTag{.task = 8});
  backend.settle(*s);
  CHECK(first.entries.size() == 1);
  CHECK(second.entries.size() == 1);
}

TEST_CASE_TEMPLATE("a stream keeps the priority it was made with; plain streams have 0", B,
                   HostBackend, SimBackend) {
  B backend;
  auto high = backend.device.make_stream_with_priority("memcpy", -1);
  auto low = backend.device.make_stream_with_priority("compute", 3);
  auto plain = backend.device.make_stream("default");
  CHECK(high->name() == "memcpy");
  CHECK(high->priority() == -1);
  CHECK(low->priority() == 3);
  CHECK(plain->priority() == 0);
  // Recorded only: the stream works as any other.
  swp::Event event;
  high->enqueue_work(1ms);
  const auto generation = high->record(event);
  backend.settle(*high);
  CHECK(event.reached(generation));
}

}  // namespace test_stream
