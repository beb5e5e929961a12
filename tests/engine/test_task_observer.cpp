#include "swp/engine/task_observer.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/engines.hpp"
#include "support/iter_of.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace test_task_observer {  // each test file's names apart (unity builds)

namespace {

using namespace std::chrono_literals;
using Ctx = swp::IterContext<int>;
using swp::TaskIndex;

// Every hook as one line, "<hook> <task> <iter> <lane>[ <detail>]", in call order.
class Journal final : public swp::TaskObserver {
 public:
  void task_released(TaskIndex t, std::int64_t i, const swp::Lane& lane) noexcept override {
    put("released", t, i, lane, "");
  }
  void task_started(TaskIndex t, std::int64_t i, const swp::Lane& lane) noexcept override {
    put("started", t, i, lane, "");
  }
  void task_waiting(TaskIndex t, std::int64_t i, const swp::Lane& lane,
                    const swp::TaskWait& wait) noexcept override {
    put("waiting", t, i, lane,
        (wait.kind == swp::TaskWait::Kind::turn ? " turn " : " dependency ") +
            std::to_string(wait.task) + " " + std::to_string(wait.iter));
  }
  void task_finished(TaskIndex t, std::int64_t i, const swp::Lane& lane, bool ok) noexcept override {
    put("finished", t, i, lane, ok ? " ok" : " failed");
  }

  // The lines of (task, iter), in order.
  std::vector<std::string> of(TaskIndex t, std::int64_t i) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    // Appended (" " + std::string: a false -Wrestrict from g++ 12 at -O3, GCC PR 105329).
    std::string key = " ";
    key += std::to_string(t);
    key += ' ';
    key += std::to_string(i);
    key += ' ';
    for (const auto& line : lines_)
      if (line.find(key) != std::string::npos) out.push_back(line);
    return out;
  }

 private:
  void put(const char* hook, TaskIndex t, std::int64_t i, const swp::Lane& lane,
           const std::string& detail) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::string(hook) + " " + std::to_string(t) + " " + std::to_string(i) + " " +
                     lane.name() + detail);
  }
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Implements only the required hooks.
struct Minimal final : swp::TaskObserver {
  int calls = 0;
  void task_released(TaskIndex, std::int64_t, const swp::Lane&) noexcept override { ++calls; }
  void task_started(TaskIndex, std::int64_t, const swp::Lane&) noexcept override { ++calls; }
  void task_finished(TaskIndex, std::int64_t, const swp::Lane&, bool) noexcept override { ++calls; }
};

}  // namespace

TEST_CASE("TaskWait defaults to a dependency on task 0 of iteration 0") {
  const swp::TaskWait wait;
  CHECK(wait.kind == swp::TaskWait::Kind::dependency);
  CHECK(wait.task == 0);
  CHECK(wait.iter == 0);
}

TEST_CASE("an observer needs only released, started and finished; waits are ignored by default") {
  static_assert(!std::is_abstract_v<Minimal>);
  swp::ThreadPoolScheduler pool(1);
  swp::Lane lane(pool, "io");
  Minimal minimal;
  swp::TaskObserver& observer = minimal;
  observer.task_waiting(0, 0, lane, swp::TaskWait{swp::TaskWait::Kind::turn, 0, 0});
  CHECK(minimal.calls == 0);
  observer.task_started(0, 0, lane);
  CHECK(minimal.calls == 1);
}

TEST_CASE("an attached observer sees each instance released, waiting, started and finished") {
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(100us);
  }, {.stage = 0, .thread_group = "io"});
  auto use = plan.add("Use", [](Ctx& ctx) {
    if (ctx.batch == 1) throw std::runtime_error("bad batch");
  }, {.stage = 0, .thread_group = "compute"});
  plan.intra_iter_deps = {{use, load}};
  swp::DataFlowPipeline<Ctx> pipe(rt, plan, 1);
  Journal journal;
  pipe.set_observer(&journal);
  pipe.fill_pipeline(std::vector<int>{0, 1});
  CHECK(swp::test::iter_of(pipe.progress()) == 0);
  CHECK_THROWS_AS(pipe.progress(), swp::TaskError);
  pipe.set_observer(nullptr);

  CHECK(journal.of(load.index, 0) ==
        std::vector<std::string>{"released 0 0 io", "started 0 0 io", "finished 0 0 io ok"});
  // Use(0) is released with Load(0) (data-flow holds it back until Load finished, so it never
  // waits); Use(1) fails.
  const auto use0 = journal.of(use.index, 0);
  REQUIRE(use0.size() == 3);
  CHECK(use0.back() == "finished 1 0 compute ok");
  CHECK(journal.of(use.index, 1).back() == "finished 1 1 compute failed");
}

TEST_CASE("a consumer released before its producer finished reports the dependency it waits for") {
  // The clock engine releases a period's instances together, so Use(0) holds its lane and
  // waits for Load(0).
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(100us);
  }, {.stage = 0, .thread_group = "io"});
  auto use = plan.add("Use", [](Ctx&) {}, {.stage = 0, .thread_group = "compute"});
  plan.intra_iter_deps = {{use, load}};
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  Journal journal;
  pipe.set_observer(&journal);
  CHECK(pipe.run(std::vector<int>{0}).iterations == 1);
  CHECK(journal.of(use.index, 0) ==
        std::vector<std::string>{"released 1 0 compute", "waiting 1 0 compute dependency 0 0",
                                 "started 1 0 compute", "finished 1 0 compute ok"});
}

TEST_CASE("a globally ordered instance reports the submission turn it waits for") {
  // Clock engine: both ordered instances are released in period 0; Second takes lane b and
  // waits there for First's turn to pass.
  swp::Runtime rt({.backend = swp::Backend::sim});
  swp::Plan<Ctx> plan;
  plan.add("First", [](Ctx&, swp::TaskScope& scope) -> swp::Co<void> {
    co_await scope.cpu_work(100us);
  }, {.stage = 0, .thread_group = "a", .globally_ordered = true});
  auto second = plan.add("Second", [](Ctx&) {},
                         {.stage = 0, .thread_group = "b", .globally_ordered = true});
  swp::ClockPipeline<Ctx> pipe(rt, plan);
  Journal journal;
  pipe.set_observer(&journal);
  CHECK(pipe.run(std::vector<int>{0}).iterations == 1);
  CHECK(journal.of(second.index, 0) ==
        std::vector<std::string>{"released 1 0 b", "waiting 1 0 b turn 1 0", "started 1 0 b",
                                 "finished 1 0 b ok"});
}

TEST_CASE_TEMPLATE("an observer attached between runs sees exactly the runs it was attached for",
                   Engine, swp::test::UseClock, swp::test::UseDataFlow) {
  // Host, one thread: the step that tells no observer is a different path from the one that
  // does; attaching and detaching between runs switches between them.
  swp::Runtime rt({.backend = swp::Backend::host, .workers = 0});
  swp::Plan<Ctx> plan;
  int ran = 0;
  auto first = plan.add("First", [&](Ctx&) { ++ran; }, {.stage = 0, .thread_group = "a"});
  auto second = plan.add("Second", [&](Ctx&) { ++ran; }, {.stage = 1, .thread_group = "b"});
  plan.intra_iter_deps = {{second, first}};
  auto pipe = Engine::template make<Ctx>(rt, plan);
  Journal journal;
  const auto run_two = [&] {
    pipe->fill_pipeline(std::vector<int>{0, 1});
    while (pipe->progress()) {
    }
  };
  run_two();  // iterations 0 and 1
  pipe->set_observer(&journal);
  run_two();  // 2 and 3
  pipe->set_observer(nullptr);
  run_two();  // 4 and 5
  CHECK(ran == 12);
  for (const auto task : {first.index, second.index}) {
    for (std::int64_t iter : {0, 1, 4, 5}) CHECK(journal.of(task, iter).empty());
    for (std::int64_t iter : {2, 3}) {
      // released → (waiting)* → started → finished: under a lane claim the consumer holds
      // its lane from its release, before its producer ran, and reports that wait (the
      // reference path queues it on its lane behind the producer instead).
      const auto lines = journal.of(task, iter);
      REQUIRE(lines.size() >= 3);
      CHECK(lines.front().rfind("released", 0) == 0);
      const std::string consumer_waits = "waiting " + std::to_string(second.index) + " " +
                                         std::to_string(iter) + " b dependency " +
                                         std::to_string(first.index) + " ";
      for (std::size_t i = 1; i + 2 < lines.size(); ++i)
        CHECK(lines[i].rfind(consumer_waits, 0) == 0);
      CHECK(lines[lines.size() - 2].rfind("started", 0) == 0);
      CHECK(lines.back().rfind("finished", 0) == 0);
    }
  }
}

}  // namespace test_task_observer
