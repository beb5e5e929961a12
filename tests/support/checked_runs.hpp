#pragma once
// Random plans run by a pipeline without an observer (so that every shortcut of the engines
// may run, see swp::FastPaths) and checked against a serial run: each body checks, as it ends,
// that what it waits for ran before it; the retirements come in order; the values match the
// serial run's and every body ran once. Shared by the in-place tests and the fast paths'
// equality tests.

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
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

#include "support/bound_plans.hpp"
#include "support/drive.hpp"
#include "support/random_plans.hpp"
#include "support/seed.hpp"
#include "swp/async/asio_scheduler.hpp"
#include "swp/async/future.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/asio.hpp"
#include "swp/engine/fast_paths.hpp"
#include "swp/engine/runtime.hpp"

namespace swp::test {

/// Chains async_progress handlers until the end of the data or an error, running `io` on two
/// threads; returns the retired iterations in order (rethrows the error).
template <class Ctx>
std::vector<std::int64_t> async_all(Pipeline<Ctx>& pipe, boost::asio::io_context& io) {
  std::vector<std::int64_t> retired;
  std::exception_ptr error;
  std::function<void(std::exception_ptr, std::optional<Retired<Ctx>>)> step =
      [&](std::exception_ptr e, std::optional<Retired<Ctx>> i) {
        if (e) {
          error = e;
        } else if (i) {
          retired.push_back(i->iter());
          async_progress(pipe, step);
        }
      };
  async_progress(pipe, step);
  std::thread helper([&] { io.run(); });
  io.run();
  helper.join();
  io.restart();
  if (error) std::rethrow_exception(error);
  return retired;
}

/// What checked_runs draws and how it runs each plan.
struct CheckedRuns {
  int plans = 10;
  std::uint32_t seed = 1;
  Drive drive = Drive::progress;
  Backend backend = Backend::host;  // host or sim (Drive::asio: lanes on an io_context)
  unsigned workers = 0;             // the pool's workers besides the caller (host)
  FastPaths fast_paths = FastPaths::all();
  RandomPlanShape shape = {};
  int max_iterations = 40;
  // Per (task, iteration), that its body suspends until another thread resumes it (host),
  // and that it stalls for 300 µs, past a worker's patience (host).
  double suspend_probability = 0;
  double stall_probability = 0;
  // Another thread drives the same pool meanwhile (as a second pipeline's progress() would),
  // so it may run what the first posts (host, Drive::progress or next).
  bool second_driver = false;
};

namespace detail_checked_runs {

// A body that suspends until another thread resumes it (through its lane), about 50 µs later.
inline Co<void> resumed_by_another_thread(std::vector<std::thread>& threads, std::mutex& mutex) {
  Promise<> promise;
  Future<> resumed = promise.get_future();
  {
    std::lock_guard lock(mutex);
    threads.emplace_back([promise]() mutable {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      promise.set_value();
    });
  }
  co_await resumed;
}

}  // namespace detail_checked_runs

/// Runs `runs.plans` random plans of `runs.shape` (see CheckedRuns) with `Engine` (UseClock,
/// UseDataFlow) and checks each against a serial run.
template <class Engine>
void checked_runs(const CheckedRuns& runs) {
  using Ctx = BoundCtx;
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
      Engine::template make<Ctx>(rt, plan, max_depth)->run_serial(batches);
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
        return detail_checked_runs::resumed_by_another_thread(resumers, resumers_mutex);
      return {};
    };
    {
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
      auto pipe = Engine::template make<Ctx>(rt, plan, max_depth);
      pipe->set_timeouts({.retire = 20s});
      std::vector<std::int64_t> retired;
      std::atomic<bool> done{false};
      std::thread driver;
      if (runs.second_driver && !sim && runs.drive != Drive::asio)
        driver = std::thread([&] {
          while (!done.load())
            rt.scheduler().drive_until([&] { return done.load(); }, Clock::now() + 1ms);
        });
      pipe->fill_pipeline(batches);
      if (runs.drive == Drive::next) {
        retired = sync_wait(next_all(*pipe));
      } else if (runs.drive == Drive::asio) {
        retired = async_all(*pipe, io);
      } else {
        while (auto i = pipe->progress()) retired.push_back(i->iter());
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
