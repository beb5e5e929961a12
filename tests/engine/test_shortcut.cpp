#include "swp/engine/shortcut.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_shortcut {  // each test file's names apart (unity builds)

namespace {

using swp::TaskIndex;

struct Fields {
  std::vector<int> declared;      // written by Encode, declared
  std::string label;              // written by Encode, declared
  int undeclared = -1;            // written by Encode, NOT declared
  int consumed = 0;               // written by Decode from what Encode left
};
using Ctx = swp::IterContext<int, Fields>;

// State outside the context that Encode updates and declares through a DeclaredIO.
struct Shared {
  std::mutex mutex;
  std::map<std::string, int> table;
  int captures = 0;
  int restores = 0;
};

struct Counts {
  std::atomic<int> encode{0};
  std::atomic<int> decode{0};
};

// Encode writes two declared fields, one undeclared field, an output value and the shared
// table; Decode reads all of it. Values depend on the batch, so a replay is recognisable: it
// shows the caching iteration's values, not the current batch's.
swp::Plan<Ctx> encode_decode_plan(Shared& shared, Counts& counts,
                                  swp::TaskSchedule decode_schedule = {.stage = 1}) {
  swp::Plan<Ctx> plan;
  auto encode = plan.add("Encode",
                         [&](Ctx& ctx) -> int {
                           ++counts.encode;
                           ctx.declared = {ctx.batch, ctx.batch * 2};
                           ctx.label = "batch" + std::to_string(ctx.batch);
                           ctx.undeclared = ctx.batch;
                           std::lock_guard lock(shared.mutex);
                           shared.table["last"] = ctx.batch;
                           return ctx.batch * 10;
                         },
                         {.stage = 0});
  plan.declare_writes(encode, swp::writes(&Fields::declared, &Fields::label));
  plan.declare_io(encode, swp::declared_io<std::map<std::string, int>>(
                              [&] {
                                std::lock_guard lock(shared.mutex);
                                ++shared.captures;
                                return shared.table;
                              },
                              [&](const std::map<std::string, int>& saved) {
                                std::lock_guard lock(shared.mutex);
                                ++shared.restores;
                                shared.table = saved;
                              }));
  auto decode = plan.add("Decode",
                         [&, encode](Ctx& ctx) -> swp::Co<void> {
                           ++counts.decode;
                           const int out = co_await ctx.get(encode);
                           ctx.consumed = out + static_cast<int>(ctx.declared.size()) +
                                          ctx.undeclared;
                         },
                         decode_schedule);
  plan.intra_iter_deps = {{decode, encode}};
  return plan;
}

}  // namespace

TEST_CASE("swp::writes snapshots the named fields and restores copies of them") {
  auto w = swp::writes(&Fields::declared, &Fields::label);
  REQUIRE(w.size() == 2);
  Fields source;
  source.declared = {1, 2};
  source.label = "x";
  source.undeclared = 7;
  std::vector<swp::Writes<Fields>::Restore> restores;
  for (const auto& snap : w.fields()) restores.push_back(snap(source));
  source.declared.clear();  // the snapshot is a copy, not a view
  Fields target;
  for (const auto& r : restores) r(target);
  CHECK(target.declared == std::vector<int>{1, 2});
  CHECK(target.label == "x");
  CHECK(target.undeclared == -1);
  target.declared.push_back(3);  // each restore writes a fresh copy
  for (const auto& r : restores) r(target);
  CHECK(target.declared == std::vector<int>{1, 2});
}

TEST_CASE("serial shortcut: the first execution caches, later ones replay exactly the declared state") {
  Shared shared;
  Counts counts;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, encode_decode_plan(shared, counts));
  std::vector<Ctx> seen;
  pipe.on_retire([&](const Ctx& ctx) { seen.push_back(ctx); });

  pipe.run_one_serial_iter(1, 0);  // normal
  pipe.enable_shortcut("Encode");
  CHECK(pipe.shortcuts() == std::set<std::string>{"Encode"});
  pipe.run_one_serial_iter(2, 1);  // caching: runs Encode on batch 2
  CHECK(shared.captures == 1);
  {
    std::lock_guard lock(shared.mutex);
    shared.table["last"] = 99;  // replay must write the captured state back
    shared.table["extra"] = 5;
  }
  pipe.run_one_serial_iter(3, 2);  // replay: batch 3, Encode skipped
  pipe.run_one_serial_iter(4, 3);  // replay
  CHECK(counts.encode == 2);
  CHECK(counts.decode == 4);
  CHECK(shared.captures == 1);
  CHECK(shared.restores == 2);
  CHECK(shared.table == std::map<std::string, int>{{"last", 2}});

  REQUIRE(seen.size() == 4);
  // Caching iteration: everything is the body's own.
  CHECK(seen[1].declared == std::vector<int>{2, 4});
  CHECK(seen[1].undeclared == 2);
  CHECK(seen[1].consumed == 20 + 2 + 2);
  // Replays: the declared fields and the output are the caching iteration's; the undeclared
  // field keeps a fresh context's value (documented: undeclared writes are not replayed).
  for (int k : {2, 3}) {
    CAPTURE(k);
    CHECK(seen[k].batch == k + 1);
    CHECK(seen[k].declared == std::vector<int>{2, 4});
    CHECK(seen[k].label == "batch2");
    CHECK(seen[k].undeclared == -1);
    CHECK(seen[k].consumed == 20 + 2 - 1);
  }

  // disable drops the cache: enabling again caches anew.
  pipe.disable_shortcut("Encode");
  CHECK(pipe.shortcuts().empty());
  pipe.run_one_serial_iter(5, 4);
  CHECK(counts.encode == 3);
  CHECK(seen.back().declared == std::vector<int>{5, 10});
  pipe.enable_shortcut(std::vector<std::string>{"Encode"});
  pipe.run_one_serial_iter(6, 5);
  pipe.run_one_serial_iter(7, 6);
  CHECK(counts.encode == 4);
  CHECK(seen.back().declared == std::vector<int>{6, 12});
  CHECK(seen.back().consumed == 60 + 2 - 1);
}

TEST_CASE_TEMPLATE("pipelined shortcut replays in every iteration and keeps the cache across runs",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  Shared shared;
  Counts counts;
  swp::Runtime rt({.workers = 2});
  auto pipe = Engine::template make<Ctx>(rt, encode_decode_plan(shared, counts));
  std::map<std::int64_t, Ctx> seen;
  pipe->on_retire([&](const Ctx& ctx) { seen[ctx.iter_idx] = ctx; });
  pipe->enable_shortcut("Encode");
  const std::vector<int> first{10, 11, 12, 13, 14, 15};
  CHECK(pipe->run(first).iterations == 6);
  CHECK(counts.encode == 1);
  CHECK(counts.decode == 6);
  REQUIRE(seen.size() == 6);
  CHECK(seen[0].declared == std::vector<int>{10, 20});
  for (std::int64_t i = 1; i < 6; ++i) {
    CAPTURE(i);
    CHECK(seen[i].batch == first[static_cast<std::size_t>(i)]);
    CHECK(seen[i].declared == std::vector<int>{10, 20});
    CHECK(seen[i].label == "batch10");
    CHECK(seen[i].consumed == 100 + 2 - 1);
  }
  CHECK(shared.captures == 1);
  CHECK(shared.restores == 5);

  // The cache survives drain and a new fill (seed: config and cache are kept); the new run's
  // iterations are numbered on (6 and 7).
  seen.clear();
  CHECK(pipe->run(std::vector<int>{30, 31}).iterations == 2);
  CHECK(counts.encode == 1);
  REQUIRE(seen.size() == 2);
  CHECK(seen[6].declared == std::vector<int>{10, 20});
  CHECK(seen[7].consumed == 100 + 2 - 1);
}

TEST_CASE_TEMPLATE("a shortcut globally ordered task still takes its submission turn", Engine,
                   swp::test::UseClock, swp::test::UseDataFlow) {
  // Two globally ordered tasks on different lanes: the order in which ordered instances start
  // must not change when one of them is shortcut (every rank submits the same sequence).
  struct Order final : swp::TaskObserver {
    std::mutex mutex;
    std::vector<std::pair<TaskIndex, std::int64_t>> started;
    std::set<TaskIndex> ordered;
    void task_released(TaskIndex, std::int64_t, const swp::Lane&) noexcept override {}
    void task_started(TaskIndex t, std::int64_t i, const swp::Lane&) noexcept override {
      std::lock_guard lock(mutex);
      if (ordered.contains(t)) started.emplace_back(t, i);
    }
    void task_finished(TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override {}
  };
  auto run = [](bool shortcut) {
    swp::Plan<Ctx> plan;
    std::atomic<int> runs{0};
    auto a = plan.add("AllToAllA", [&](Ctx&) { ++runs; },
                      {.stage = 0, .stream = "comm_a", .thread_group = "a", .globally_ordered = true});
    auto b = plan.add("AllToAllB", [&](Ctx&) { ++runs; },
                      {.stage = 1, .stream = "comm_b", .thread_group = "b", .globally_ordered = true});
    auto c = plan.add("Compute", [](Ctx&) {}, {.stage = 1});
    plan.intra_iter_deps = {{c, b}};
    (void)a;
    swp::Runtime rt({.workers = 2});
    auto pipe = Engine::template make<Ctx>(rt, plan);
    Order order;
    order.ordered = {0, 1};
    pipe->set_observer(&order);
    if (shortcut) pipe->enable_shortcut("AllToAllB");
    CHECK(pipe->run(std::vector<int>(8, 1)).iterations == 8);
    CHECK(runs == (shortcut ? 8 + 1 : 16));
    return order.started;
  };
  const auto normal = run(false);
  const auto shortcut = run(true);
  CHECK(normal.size() == 16);
  CHECK(shortcut == normal);
}

TEST_CASE("shortcut errors name the task and change nothing") {
  Shared shared;
  Counts counts;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::DataFlowPipeline<Ctx> pipe(rt, encode_decode_plan(shared, counts), 2);

  try {
    pipe.enable_shortcut("Encode", "Nope", "Missing");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("'Nope'") != std::string::npos);
    CHECK(what.find("'Missing'") != std::string::npos);
  }
  CHECK(pipe.shortcuts().empty());  // all or nothing
  CHECK_THROWS_AS(pipe.disable_shortcut("Nope"), std::invalid_argument);

  pipe.fill_pipeline(std::vector<int>{1, 2, 3});
  CHECK_THROWS_AS(pipe.enable_shortcut("Encode"), swp::PipelineStateError);
  pipe.drain();
  pipe.enable_shortcut("Encode");
  CHECK(pipe.shortcuts().size() == 1);
}

TEST_CASE("disable_shortcut with no names ends every task's shortcut") {
  Shared shared;
  Counts counts;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, encode_decode_plan(shared, counts));
  pipe.enable_shortcut("Encode", "Decode");
  CHECK(pipe.shortcuts() == std::set<std::string>{"Decode", "Encode"});
  pipe.disable_shortcut();
  CHECK(pipe.shortcuts().empty());
}

TEST_CASE("a task whose output cannot be copied cannot be shortcut") {
  swp::Plan<Ctx> plan;
  plan.add("MakeBuffer", [](Ctx&) { return std::make_unique<int>(1); });
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  CHECK_THROWS_WITH_AS(pipe.enable_shortcut("MakeBuffer"), doctest::Contains("'MakeBuffer'"),
                       std::invalid_argument);
}

TEST_CASE("declare_writes and declare_io reject tasks the plan does not have") {
  swp::Plan<Ctx> plan;
  plan.add("A", [](Ctx&) {});
  plan.add(swp::PipelineTask("Bodiless"));
  CHECK_THROWS_WITH_AS(plan.declare_writes("B", swp::writes(&Fields::label)),
                       doctest::Contains("'B'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(plan.declare_writes("Bodiless", swp::writes(&Fields::label)),
                       doctest::Contains("'Bodiless'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(plan.declare_io("B", swp::DeclaredIO{}), doctest::Contains("'B'"),
                       std::invalid_argument);
  plan.declare_writes("A", swp::writes(&Fields::label));
}

TEST_CASE("a TaskBody bound by name declares writes, as presets' bindings do") {
  Counts counts;
  swp::Plan<Ctx> plan;
  plan.add(swp::PipelineTask("Encode"));
  plan.bind("Encode", swp::TaskBody<Ctx>(
                          [&](Ctx& ctx) {
                            ++counts.encode;
                            ctx.label = std::to_string(ctx.batch);
                          },
                          swp::writes(&Fields::label)));
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  std::vector<std::string> labels;
  pipe.on_retire([&](const Ctx& ctx) { labels.push_back(ctx.label); });
  pipe.enable_shortcut("Encode");
  pipe.run_serial(std::vector<int>{4, 5, 6});
  CHECK(counts.encode == 1);
  CHECK(labels == std::vector<std::string>{"4", "4", "4"});
}

TEST_CASE("format_schedule marks shortcut tasks [skip]") {
  Shared shared;
  Counts counts;
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(rt, encode_decode_plan(shared, counts));
  CHECK(pipe.format_schedule(2).find("[skip]") == std::string::npos);
  pipe.enable_shortcut("Decode");
  const std::string table = pipe.format_schedule(2);
  CHECK(table.find("Decode [skip]") != std::string::npos);
  CHECK(table.find("Encode [skip]") == std::string::npos);
}

}  // namespace test_shortcut
