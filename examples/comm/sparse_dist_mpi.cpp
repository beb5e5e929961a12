// sparse_dist_mpi: seed 004's split input distribution across MPI ranks (docs/comm.md). The
// SparseDist preset's tasks are bound to an swp::InputDist — InputDistStart (globally ordered,
// data_dist lane and stream) calls both levels, InputDistWait waits for the fused splits,
// Forward for its modules' ids — and compared with the native order, where Forward
// distributes its own input and waits for both levels before computing. Host streams stand in
// for the GPU (Forward and Backward queue `--compute-us` of work on the default stream each).
// From each run's trace, rank 0 prints how much of the exchange overlapped the compute and
// how busy the compute stream was:
//   mpirun -np 4 build/examples/sparse_dist_mpi [--iters N] [--ids K] [--compute-us C]
// (N, K >= 1, C >= 0; a bad flag exits 2, naming it)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "swp/async/co.hpp"
#include "swp/comm/abort_on_failure.hpp"
#include "swp/comm/input_dist.hpp"
#include "swp/comm/mpi/mpi_communicator.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/task_bindings.hpp"
#include "swp/trace/trace_recorder.hpp"

namespace {

using Ctx = swp::IterContext<int>;
using Interval = std::pair<double, double>;  // µs since the run's start

struct Options {
  int iters = 40;
  int ids = 65536;  // per module, per destination rank
  int compute_us = 2000;
};

// Merged, sorted intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double total = 0;
  for (const auto& [a, b] : v) total += b - a;
  return total;
}

double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  for (const auto& x : a)
    for (const auto& y : b)
      total += std::max(0.0, std::min(x.second, y.second) - std::max(x.first, y.first));
  return total;
}

struct Figures {
  double us_per_iter = 0;
  double comm_overlap = 0;  // share of the exchange's time during which compute ran
  double compute_busy = 0;  // compute stream busy over the compute's span
};

// What the trace says: the exchange is the device work nobody tagged (the communicator's
// operations on their stream), the compute is Forward's and Backward's device work.
Figures from_trace(const swp::Trace& trace, double wall_us, int iters) {
  std::vector<Interval> comm, compute;
  for (const auto& s : trace.slices) {
    if (s.kind != swp::TraceSlice::Kind::device) continue;
    const double a = std::chrono::duration<double, std::micro>(s.start).count();
    const double b = std::chrono::duration<double, std::micro>(s.end).count();
    const std::string& task = trace.tasks[s.task];
    if (task == "Forward" || task == "Backward") {
      compute.push_back({a, b});
    } else {
      comm.push_back({a, b});
    }
  }
  comm = merged(comm);
  compute = merged(compute);
  Figures f;
  f.us_per_iter = wall_us / iters;
  f.comm_overlap = length(comm) > 0 ? overlap(comm, compute) / length(comm) : 0;
  if (!compute.empty())
    f.compute_busy = length(compute) / (compute.back().second - compute.front().first);
  return f;
}

// Rank `from`'s ids for rank `to`, module `m`, iteration `it`.
swp::ModuleInput input_for(const swp::Communicator& world, int m, std::int64_t it, int ids) {
  swp::ModuleInput in;
  for (int to = 0; to < world.size(); ++to) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(ids + (to + m) % 7));
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = it * 1'000'000'000 + world.rank() * 1'000'000 + static_cast<std::int64_t>(k);
    in.to_rank.push_back(std::move(v));
  }
  return in;
}

// Runs the SparseDist plan; `split` binds the seed-004 split, otherwise Forward distributes.
Figures run(swp::Communicator& world, const Options& o, bool split, std::int64_t& checksum) {
  swp::InputDist dist;
  dist.add_module("ebc", world).add_module("ec", world);
  std::mutex mutex;
  std::map<std::int64_t, swp::InputDist::Batch> batches;
  const auto batch = [&](std::int64_t it) -> swp::InputDist::Batch& {
    std::lock_guard lock(mutex);
    return batches[it];
  };
  const auto compute = std::chrono::microseconds(o.compute_us);
  checksum = 0;
  const auto consume = [&](swp::InputDist::Batch& b) {
    std::int64_t sum = 0;
    for (const char* m : {"ebc", "ec"})
      for (std::int64_t id : b.take(m).values) sum += id;
    std::lock_guard lock(mutex);
    checksum += sum;
  };

  swp::presets::TaskBindings<swp::Plan<Ctx>> tasks;
  for (const char* idle : {"H2D", "ZeroGrad", "WaitBatch", "OptimizerStep"})
    tasks.bind(idle, [](Ctx&, swp::TaskScope&) {});
  tasks.bind("Backward", [=](Ctx&, swp::TaskScope& scope) { scope.device_work(compute); });
  const auto start = [&](Ctx& ctx, swp::Stream& stream) {
    const std::int64_t it = ctx.iter_idx;
    batch(it) = dist.start(
        stream, {{"ebc", input_for(world, 0, it, o.ids)}, {"ec", input_for(world, 1, it, o.ids)}},
        "InputDist iter " + std::to_string(it));
  };
  if (split) {
    tasks.bind("InputDistStart",
               [&](Ctx& ctx, swp::TaskScope& scope) { start(ctx, scope.stream()); });
    tasks.bind("InputDistWait", [&](Ctx& ctx, swp::TaskScope&) -> swp::Co<void> {
      for (const auto& f : batch(ctx.iter_idx).splits()) co_await f;  // wait #1
    });
    tasks.bind("Forward", [&](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
      auto& b = batch(ctx.iter_idx);
      for (const char* m : {"ebc", "ec"}) co_await b.tensors(m).on(scope.stream());  // wait #2
      consume(b);
      scope.device_work(compute);
    });
  } else {
    tasks.bind("InputDistStart", [](Ctx&, swp::TaskScope&) {});
    tasks.bind("InputDistWait", [](Ctx&, swp::TaskScope&) {});
    tasks.bind("Forward", [&](Ctx& ctx, swp::TaskScope& scope) -> swp::Co<void> {
      // Native: input_dist(...).wait().wait() inside forward, on the compute stream.
      start(ctx, scope.stream());
      auto& b = batch(ctx.iter_idx);
      for (const auto& f : b.splits()) co_await f;
      for (const char* m : {"ebc", "ec"}) co_await b.tensors(m);
      consume(b);
      scope.device_work(compute);
    });
  }
  const auto preset = swp::presets::make_preset("sparse_dist", tasks);
  swp::Runtime rt(
      {.backend = swp::Backend::host, .workers = 2, .dedicated_lanes = preset.dedicated_lanes});
  swp::DataFlowPipeline<Ctx> pipe(rt, preset.plan(), 3);
  // A rank whose task fails tells the others at once, rather than leaving them to time out.
  swp::abort_peers_on_failure(pipe, world);
  swp::TraceRecorder recorder;
  swp::attach_run_observer(recorder, pipe);
  std::vector<int> inputs(static_cast<std::size_t>(o.iters));
  const auto t0 = std::chrono::steady_clock::now();
  pipe.run(inputs);
  const double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  swp::detach_run_observer(recorder, pipe);
  return from_trace(recorder.trace(), wall_us, o.iters);
}

}  // namespace

int main(int argc, char** argv) {
  swp::MpiSession mpi(argc, argv);
  CLI::App app{"Seed 004's split input distribution across MPI ranks against the native order "
               "(docs/comm.md).",
               "sparse_dist_mpi"};
  Options o;
  app.add_option("--iters", o.iters, "iterations of each order")
      ->check(examples::integer_in(1, 1'000'000));
  app.add_option("--ids", o.ids, "ids per module and destination rank")
      ->check(examples::integer_in(1, 1 << 26));
  app.add_option("--compute-us", o.compute_us, "device work of Forward and of Backward, us")
      ->check(examples::integer_in(0, 10'000'000));
  // Every rank parses the same command line: a bad flag ends each of them with exit 2.
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  try {
    auto world = swp::MpiCommunicator::world();
    std::int64_t native_sum = 0, split_sum = 0;
    const Figures native = run(*world, o, false, native_sum);
    const Figures split = run(*world, o, true, split_sum);
    if (native_sum != split_sum)
      throw std::runtime_error("rank " + std::to_string(world->rank()) +
                               ": the two orders received different ids");
    if (world->rank() == 0) {
      std::printf(
          "sparse_dist_mpi: %d ranks, %d iterations, %d ids per module and peer, "
          "%d us compute per pass\n",
          world->size(), o.iters, o.ids, o.compute_us);
      std::printf("metric native_us_per_iter %.1f us\n", native.us_per_iter);
      std::printf("metric split_us_per_iter %.1f us\n", split.us_per_iter);
      std::printf("metric split_speedup %.3f x\n", native.us_per_iter / split.us_per_iter);
      std::printf("metric native_comm_overlap %.3f fraction\n", native.comm_overlap);
      std::printf("metric split_comm_overlap %.3f fraction\n", split.comm_overlap);
      std::printf("metric native_compute_busy %.3f fraction\n", native.compute_busy);
      std::printf("metric split_compute_busy %.3f fraction\n", split.compute_busy);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparse_dist_mpi: %s\n", e.what());
    return 1;
  }
  return 0;
}
