// checked_runs (checked_runs.hpp), compiled once for every test file that runs it.

#include "support/checked_runs.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/busy_workers.hpp"
#include "support/resumed_later.hpp"
#include "support/seed.hpp"
#include "swp/async/asio_scheduler.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/core/plan_json.hpp"

namespace swp::test {

void checked_runs(const CheckedRuns& runs, MakeCheckedPipeline make) {
  using namespace std::chrono_literals;
  std::mt19937 rng(seed(runs.seed));
  const bool sim = runs.backend == Backend::sim;
  for (int n = 0; n < runs.plans; ++n) {
    // Members by name, not a structured binding: clang 14 cannot capture a binding in a
    // lambda (CAPTURE makes one).
    const RandomRun drawn = random_run(rng, runs.max_iterations, runs.shape);
    const auto& source = drawn.source;
    const auto& graph = drawn.graph;
    const auto iterations = drawn.iterations;
    const auto max_depth = drawn.max_depth;
    const auto& batches = drawn.batches;
    std::set<std::pair<TaskIndex, std::int64_t>> suspending, stalling;
    for (std::int64_t i = 0; i < iterations; ++i) {
      for (TaskIndex t = 0; t < graph.size(); ++t) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < runs.suspend_probability)
          suspending.insert({t, i});
        if (std::uniform_real_distribution<double>(0, 1)(rng) < runs.stall_probability)
          stalling.insert({t, i});
      }
    }
    CAPTURE(n);
    CAPTURE(plan_to_json(source));

    Results serial_results;
    {
      Runtime rt({.backend = runs.backend, .workers = 2});
      auto plan = bind(source, serial_results);
      make(rt, plan, max_depth)->run_serial(batches);
    }
    // The lane edge (a task's instance waits for its instance before) holds for a task alone
    // on its lane; a lane shared by several tasks keeps the release order only.
    std::map<std::string, int> on_lane;
    for (TaskIndex t = 0; t < graph.size(); ++t) ++on_lane[std::string(graph.lane(t))];
    Results results;
    std::atomic<int> out_of_order{0};
    std::vector<std::thread> resumers;
    std::mutex resumers_mutex;
    const BodyHook hook = [&](TaskIndex t, std::int64_t i) -> Co<void> {
      {
        std::lock_guard lock(results.mutex);
        const auto ran = [&](TaskIndex d, std::int64_t at) {
          return results.value.contains({d, at});
        };
        for (TaskIndex d : graph.intra_deps(t))
          if (!ran(d, i)) ++out_of_order;
        if (i > 0) {
          for (TaskIndex d : graph.inter_deps(t))
            if (!ran(d, i - 1)) ++out_of_order;
          if (on_lane.at(std::string(graph.lane(t))) == 1 && !ran(t, i - 1)) ++out_of_order;
        }
      }
      if (!sim && stalling.contains({t, i})) std::this_thread::sleep_for(300us);
      if (!sim && suspending.contains({t, i}))
        return resumed_by_another_thread(resumers, resumers_mutex);
      return {};
    };
    {
      // Before the runtime, which joins the workers that wait in it.
      std::optional<BusyWorkers> busy;
      boost::asio::io_context io;
      std::unique_ptr<Runtime> runtime =
          runs.drive == Drive::asio
              ? std::make_unique<Runtime>(std::make_unique<AsioScheduler>(io.get_executor()),
                                          RuntimeOptions{.fast_paths = runs.fast_paths})
              : std::make_unique<Runtime>(RuntimeOptions{.backend = runs.backend,
                                                         .workers = runs.workers,
                                                         .fast_paths = runs.fast_paths});
      Runtime& rt = *runtime;
      auto plan = bind(source, results, {~TaskIndex{0}, -1}, &hook);
      auto pipe = make(rt, plan, max_depth);
      pipe->set_timeouts({.retire = 20s});
      std::vector<std::int64_t> retired;
      std::atomic<bool> done{false};
      std::thread driver;
      if (runs.second_driver && !sim && runs.drive != Drive::asio)
        driver = std::thread([&] {
          while (!done.load())
            rt.scheduler().drive_until([&] { return done.load(); }, Clock::now() + 1ms);
        });
      // Each worker takes one (the caller drives nothing yet) and waits in it; released after
      // busy_workers_for retirements, or however the run ends (the runtime joins them).
      const bool keep_busy = runs.busy_workers_for > 0 && !sim && runs.drive == Drive::progress;
      if (keep_busy) busy.emplace(rt.scheduler(), runs.workers);
      const BusyWorkers::ReleaseOnExit release_busy(busy ? &*busy : nullptr);
      if (runs.drive == Drive::run) {
        pipe->on_retire([&retired](const BoundCtx& ctx) { retired.push_back(ctx.iter_idx); });
        CHECK(pipe->run(batches).iterations == iterations);
      } else {
        pipe->fill_pipeline(batches);
        if (runs.drive == Drive::next) {
          retired = sync_wait(next_all(*pipe));
        } else if (runs.drive == Drive::asio) {
          retired = async_all(*pipe, io);
        } else {
          while (auto i = pipe->progress()) {
            retired.push_back(i->iter());
            if (keep_busy && std::ssize(retired) == runs.busy_workers_for) busy->release();
          }
        }
      }
      done.store(true);
      rt.scheduler().notify();
      if (driver.joinable()) driver.join();
      std::vector<std::int64_t> expected(static_cast<std::size_t>(iterations));
      for (std::int64_t i = 0; i < iterations; ++i) expected[static_cast<std::size_t>(i)] = i;
      CHECK(retired == expected);
      pipe->drain();
      pipe->synchronize();
      // A resumer may still be inside the post that resumed its body: joined before the
      // runtime goes.
      for (std::thread& resumer : resumers) resumer.join();
    }
    CHECK(out_of_order.load() == 0);
    CHECK(results.value == serial_results.value);
    for (const auto& [key, ran] : results.runs) CHECK(ran == 1);
  }
}

}  // namespace swp::test
