#pragma once
// Random plans run by a pipeline without an observer (so that every shortcut of the engines
// may run, see swp::FastPaths) and checked against a serial run: each body checks, as it ends,
// that what it waits for ran before it; the retirements come in order; the values match the
// serial run's and every body ran once. Shared by the in-place tests and the fast paths'
// equality tests.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "support/bound_plans.hpp"
#include "support/drive.hpp"
#include "support/random_plans.hpp"
#include "swp/engine/asio.hpp"
#include "swp/engine/fast_paths.hpp"
#include "swp/engine/pipeline.hpp"
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
  // Every worker is kept busy (a runnable of the pool that waits) until this many iterations
  // retired, so the caller runs everything meanwhile (host, Drive::progress; 0: none).
  int busy_workers_for = 0;
};

/// How checked_runs makes a pipeline of each engine (UseClock::make, UseDataFlow::make).
using MakeCheckedPipeline = std::unique_ptr<Pipeline<BoundCtx>> (*)(Runtime&, const Plan<BoundCtx>&,
                                                                    int);

/// Runs `runs.plans` random plans of `runs.shape` (see CheckedRuns) with the pipelines `make`
/// makes and checks each against a serial run (tests/support/checked_runs.cpp: compiled once).
void checked_runs(const CheckedRuns& runs, MakeCheckedPipeline make);

/// The same for `Engine` (UseClock, UseDataFlow).
template <class Engine>
void checked_runs(const CheckedRuns& runs) {
  checked_runs(runs, &Engine::template make<BoundCtx, Plan<BoundCtx>>);
}

}  // namespace swp::test
