#include "swp/engine/detail/task_hooks.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "swp/async/sim_scheduler.hpp"
#include "swp/device/nvtx_ranges.hpp"
#include "swp/engine/detail/task_table.hpp"

namespace test_task_hooks {  // each test file's names apart (unity builds)

using swp::detail::Instance;
using swp::detail::InstanceArray;
using swp::detail::InstanceCold;
using swp::detail::IterationSync;
using swp::detail::TaskHooks;

namespace {

// What an observer heard, one line per call, in order.
struct Log final : swp::TaskObserver {
  std::vector<std::string> lines;
  void task_released(swp::TaskIndex t, std::int64_t i, const swp::Lane& lane) noexcept override {
    lines.push_back("released " + std::to_string(t) + "@" + std::to_string(i) + " " + lane.name());
  }
  void task_started(swp::TaskIndex t, std::int64_t i, const swp::Lane&) noexcept override {
    lines.push_back("started " + std::to_string(t) + "@" + std::to_string(i));
  }
  void task_waiting(swp::TaskIndex t, std::int64_t i, const swp::Lane&,
                    const swp::TaskWait& wait) noexcept override {
    lines.push_back("waiting " + std::to_string(t) + "@" + std::to_string(i) + " for " +
                    std::to_string(wait.task) + "@" + std::to_string(wait.iter));
  }
  void task_finished(swp::TaskIndex t, std::int64_t i, const swp::Lane&,
                     bool ok) noexcept override {
    lines.push_back("finished " + std::to_string(t) + "@" + std::to_string(i) +
                    (ok ? " ok" : " failed"));
  }
};

// Task 0's instance in iteration 7, on lane "io".
struct OneInstance {
  OneInstance() : entries(1) {
    entries[0].iter = 7;
    entries[0].instances = InstanceArray(1);
    entries[0].cold = std::make_unique<InstanceCold[]>(1);
    Instance& made = entries[0].instances.emplace();
    made.sync = &entries[0];
    made.info = &info;
    info.lane = &lane;
    info.task = 0;
  }
  [[nodiscard]] Instance& in() const { return entries[0].instances[0]; }

  swp::SimScheduler sim;
  swp::Lane lane{sim, "io"};
  std::vector<IterationSync> entries;
  swp::detail::TaskInfo info;
};

}  // namespace

TEST_CASE("task hooks are off until an observer or NVTX ranges are set") {
  TaskHooks hooks;
  CHECK_FALSE(hooks.on());
  Log log;
  hooks.set_observer(&log);
  CHECK(hooks.on());
  CHECK(hooks.observer() == &log);
  hooks.set_observer(nullptr);
  CHECK_FALSE(hooks.on());
  // Ranges only where NVTX is compiled in.
  CHECK(hooks.set_nvtx(true) == swp::nvtx_compiled());
  CHECK(hooks.nvtx() == swp::nvtx_compiled());
  CHECK(hooks.on() == swp::nvtx_compiled());
  CHECK_FALSE(hooks.set_nvtx(false));
  CHECK_FALSE(hooks.on());
}

TEST_CASE("task hooks tell the observer each step of an instance, the release before its submit") {
  OneInstance one;
  TaskHooks hooks;
  int submitted = 0;
  hooks.released(one.in(), one.lane, [&] { ++submitted; });  // no observer: just the submit
  CHECK(submitted == 1);

  Log log;
  hooks.set_observer(&log);
  hooks.released(one.in(), one.lane, [&] {
    ++submitted;
    log.lines.push_back("submit");
  });
  hooks.waiting(one.in(), swp::TaskWait{swp::TaskWait::Kind::dependency, 2, 6});
  hooks.started(one.in(), false);
  hooks.finished(one.in(), false);
  CHECK(submitted == 2);
  CHECK(log.lines == std::vector<std::string>{"released 0@7 io", "submit", "waiting 0@7 for 2@6",
                                              "started 0@7", "finished 0@7 failed"});
}

}  // namespace test_task_hooks
