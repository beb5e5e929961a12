#include "dispatch.hpp"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "busy_core.hpp"
#include "counting_allocator.hpp"
#include "metric.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/runtime.hpp"

namespace swp_bench {

namespace {

using Ctx = swp::IterContext<std::int64_t>;
using SteadyClock = std::chrono::steady_clock;

constexpr int chain_tasks = 4;
constexpr int in_flight = 4;  // data-flow max_depth, the clock engine's depth, TBB tokens

// Before each swp measurement: oneTBB's workers spin for a while after a parallel_pipeline
// returns, and a measurement started meanwhile shares the cores with them (on two cores the
// data-flow engine measured right after oneTBB read 12-16 ns per task instead of 8 in most
// rounds). Not before oneTBB's: its measurement follows an swp one, whose threads are gone
// with its runtime, and after an idle gap oneTBB's two threads fell into a slow mode in most
// rounds (120-150 ns per task instead of 26-29): each is measured in its best conditions.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

enum class Workload { empty, device, cpu };
enum class Engine { tbb, data_flow, clock };

const char* engine_label(Engine e) {
  switch (e) {
    case Engine::tbb:
      return "tbb";
    case Engine::data_flow:
      return "dataflow";
    case Engine::clock:
      return "clock";
  }
  return "?";
}

// "1 thread": the caller runs everything (swp workers = 0, a oneTBB arena of 1).
// "2 threads": the caller, which helps while it waits in progress(), plus one worker.
struct Threads {
  const char* suffix;
  unsigned swp_workers;
  int tbb_concurrency;
};
constexpr Threads thread_counts[] = {{"", 1, 2}, {"_1t", 0, 1}};

// Four tasks T0..T3 in a chain, one lane each, stages 0..3, without bodies. Empty tasks have
// no costs; device tasks each enqueue a 1 ns item on their own stream s0..s3 (a zero cost
// would enqueue nothing), so the engine records events and makes cross-stream waits.
// (Names are appended, not built with "T" + std::string: g++ 12 warns falsely about that,
// -Wrestrict, GCC PR 105329.)
std::string numbered(const char* prefix, int n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

// The cpu workload's task: `us` microseconds of the calling thread's time (the same spin in
// the swp bodies and in oneTBB's filters).
void spin_for(double us) {
  if (us <= 0) return;  // the empty chain's filters read no clock
  const auto until = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double, std::micro>(us));
  while (SteadyClock::now() < until) {
  }
}

// Cpu tasks have bodies that spin (synchronous: no coroutine frame).
swp::Plan<Ctx> chain_plan(Workload workload, double task_us) {
  swp::Plan<Ctx> plan;
  for (int s = 0; s < chain_tasks; ++s) {
    swp::TaskSchedule schedule{.stage = s, .thread_group = numbered("lane", s)};
    if (workload == Workload::cpu) {
      plan.add(numbered("T", s), [task_us](Ctx&) { spin_for(task_us); }, schedule);
      continue;
    }
    swp::SyntheticCost cost{};
    if (workload == Workload::device) {
      schedule.stream = numbered("s", s);
      cost.device_us = 0.001;
    }
    plan.add(numbered("T", s), schedule, cost);
  }
  // Built in place: moving a Dependency of names into the vector draws a false
  // -Wmaybe-uninitialized from g++ 12 at -O2 (the variant's other alternative).
  for (int s = 1; s < chain_tasks; ++s)
    plan.intra_iter_deps.emplace_back(numbered("T", s), numbered("T", s - 1));
  return plan;
}

struct Window {
  long warmup;  // iterations retired before the window opens
  long iters;   // iterations retired inside it
  std::size_t capture_sites = 0;
};

struct Measurement {
  double ns_per_task = 0;
  double allocs_per_task = 0;
};

Measurement per_task(SteadyClock::duration elapsed, std::uint64_t allocs, long iters) {
  const double tasks = static_cast<double>(iters) * chain_tasks;
  return {std::chrono::duration<double, std::nano>(elapsed).count() / tasks,
          static_cast<double>(allocs) / tasks};
}

void require_iteration(const std::optional<std::int64_t>& retired) {
  if (!retired) throw std::logic_error("dispatch: the pipeline ended before the window closed");
}

// The steady state of `pipe`: `warmup` retirements, then a window of `iters` retirements
// timed and counted, with `in_flight` more iterations in the source so that the pipeline is
// still full when the window closes; the drain after it is not measured.
template <class Pipe>
Measurement drive(Pipe& pipe, const Window& w) {
  const std::int64_t total = w.warmup + w.iters + in_flight;
  std::int64_t next = 0;
  // Two words, trivially copyable: std::function keeps it inline, so pulling a batch does not
  // allocate.
  auto source = [&next, total]() -> std::optional<std::int64_t> {
    if (next >= total) return std::nullopt;
    return next++;
  };
  pipe.fill_pipeline(source);
  for (long i = 0; i < w.warmup; ++i) require_iteration(pipe.progress());
  if (w.capture_sites > 0) start_site_capture(w.capture_sites);
  const std::uint64_t allocs_before = allocations();
  const auto start = SteadyClock::now();
  for (long i = 0; i < w.iters; ++i) require_iteration(pipe.progress());
  const auto end = SteadyClock::now();
  const std::uint64_t allocs_after = allocations();
  stop_site_capture();
  while (pipe.progress()) {
  }
  pipe.synchronize();
  return per_task(end - start, allocs_after - allocs_before, w.iters);
}

Measurement measure_swp(Engine engine, Workload workload, unsigned workers, const Window& w,
                        double task_us = 0) {
  const swp::Plan<Ctx> plan = chain_plan(workload, task_us);
  swp::Runtime runtime({.backend = swp::Backend::host, .workers = workers});
  if (engine == Engine::clock) {
    swp::ClockPipeline<Ctx> pipe(runtime, plan);
    return drive(pipe, w);
  }
  swp::DataFlowPipeline<Ctx> pipe(runtime, plan, in_flight);
  return drive(pipe, w);
}

// oneTBB's counterpart of the empty chain: a serial_in_order source and three serial_in_order
// filters, `in_flight` tokens, in `arena`. The window is the same as drive()'s, read in the
// last filter (serial: one invocation at a time, each ordered after the previous one).
double measure_tbb_ns(tbb::task_arena& arena, const Window& w, double task_us = 0) {
  const long total = w.warmup + w.iters + in_flight;
  long produced = 0;
  long retired = 0;
  SteadyClock::time_point start{}, end{};
  auto source = [&](tbb::flow_control& fc) -> long {
    if (produced == total) {
      fc.stop();
      return 0;
    }
    spin_for(task_us);
    return produced++;
  };
  auto pass = [task_us](long x) {
    spin_for(task_us);
    return x;
  };
  auto sink = [&](long) {
    spin_for(task_us);
    ++retired;
    if (retired == w.warmup) {
      start = SteadyClock::now();
    } else if (retired == w.warmup + w.iters) {
      end = SteadyClock::now();
    }
  };
  constexpr auto mode = tbb::filter_mode::serial_in_order;
  arena.execute([&] {
    tbb::parallel_pipeline(in_flight, tbb::make_filter<void, long>(mode, source) &
                                          tbb::make_filter<long, long>(mode, pass) &
                                          tbb::make_filter<long, long>(mode, pass) &
                                          tbb::make_filter<long, void>(mode, sink));
  });
  return per_task(end - start, 0, w.iters).ns_per_task;
}

const char* workload_suffix(Workload workload) {
  switch (workload) {
    case Workload::empty:
      return "";
    case Workload::device:
      return "_device";
    case Workload::cpu:
      return "_cpu";
  }
  return "?";
}

std::string key(const char* what, Engine engine, Workload workload, const Threads& threads) {
  return std::string(what) + "_" + engine_label(engine) + workload_suffix(workload) +
         threads.suffix;
}

}  // namespace

void run_dispatch(const DispatchOptions& options) {
  if (options.rounds < 1 || options.iters < 1 || options.device_iters < 1 || options.warmup < 1 ||
      options.task_iters < 1)
    throw std::invalid_argument(
        "dispatch: rounds, iters, device iters, task iters and warmup must be at least 1");
  if (!(options.task_us >= 0))
    throw std::invalid_argument("dispatch: --task-us must be at least 0");
  std::unique_ptr<BusyCore> hog;
  if (options.busy_core) {
    hog = std::make_unique<BusyCore>();
    std::fprintf(stderr, "dispatch: busy core %d\n", hog->core());
  }
  metric("busy_core", options.busy_core ? 1 : 0, "flag");
  metric("dispatch_rounds", options.rounds, "count");
  metric("dispatch_iters", static_cast<double>(options.iters), "count");
  metric("dispatch_device_iters", static_cast<double>(options.device_iters), "count");

  const Window window{.warmup = options.warmup, .iters = options.iters};
  const Window device_window{.warmup = options.warmup, .iters = options.device_iters};
  const bool cpu = options.task_us > 0;
  const Window cpu_window{.warmup = std::min(options.warmup, options.task_iters),
                          .iters = options.task_iters};
  if (cpu) metric("task_us", options.task_us, "us");
  std::map<const Threads*, std::unique_ptr<tbb::task_arena>> arenas;
  for (const Threads& t : thread_counts) {
    auto arena = std::make_unique<tbb::task_arena>(t.tbb_concurrency);
    // oneTBB starts its worker threads and allocates its pipeline state on first use: warm it
    // up with an untimed run of the same shape before the rounds.
    measure_tbb_ns(*arena, window);
    arenas.emplace(&t, std::move(arena));
  }

  std::map<std::string, std::vector<double>> ns, allocs;
  const Engine swp_engines[] = {Engine::data_flow, Engine::clock};
  for (int round = 0; round < options.rounds; ++round) {
    for (const Threads& t : thread_counts) {
      const std::string tbb_key = key("ns_per_task", Engine::tbb, Workload::empty, t);
      ns[tbb_key].push_back(measure_tbb_ns(*arenas.at(&t), window));
      // Every sample on stderr, so that a reader can see the spread behind the medians.
      std::fprintf(stderr, "dispatch: round %d %s %.1f ns\n", round + 1, tbb_key.c_str(),
                   ns[tbb_key].back());
      if (cpu) {
        const std::string cpu_key = key("ns_per_task", Engine::tbb, Workload::cpu, t);
        ns[cpu_key].push_back(measure_tbb_ns(*arenas.at(&t), cpu_window, options.task_us));
        std::fprintf(stderr, "dispatch: round %d %s %.1f ns\n", round + 1, cpu_key.c_str(),
                     ns[cpu_key].back());
      }
      for (Workload workload : {Workload::empty, Workload::device, Workload::cpu}) {
        if (workload == Workload::cpu && !cpu) continue;
        for (Engine e : swp_engines) {
          const Window& w = workload == Workload::device ? device_window
                            : workload == Workload::cpu  ? cpu_window
                                                         : window;
          settle();
          const Measurement m = measure_swp(e, workload, t.swp_workers, w, options.task_us);
          const std::string ns_key = key("ns_per_task", e, workload, t);
          ns[ns_key].push_back(m.ns_per_task);
          allocs[key("allocs_per_task", e, workload, t)].push_back(m.allocs_per_task);
          std::fprintf(stderr, "dispatch: round %d %s %.1f ns, %.4g allocs per task\n", round + 1,
                       ns_key.c_str(), m.ns_per_task, m.allocs_per_task);
        }
      }
    }
  }

  for (const Threads& t : thread_counts) {
    const double tbb = median(ns.at(key("ns_per_task", Engine::tbb, Workload::empty, t)));
    for (Engine e : {Engine::data_flow, Engine::clock, Engine::tbb})
      metric(key("ns_per_task", e, Workload::empty, t),
             median(ns.at(key("ns_per_task", e, Workload::empty, t))), "ns");
    for (Engine e : swp_engines)
      metric(std::string(engine_label(e)) + "_over_tbb" + t.suffix,
             median(ns.at(key("ns_per_task", e, Workload::empty, t))) / tbb, "ratio");
    for (Engine e : {Engine::data_flow, Engine::clock, Engine::tbb})
      metric(key("ns_per_task", e, Workload::empty, t) + "_min",
             minimum(ns.at(key("ns_per_task", e, Workload::empty, t))), "ns");
    for (Engine e : swp_engines)
      metric(key("allocs_per_task", e, Workload::empty, t),
             median(allocs.at(key("allocs_per_task", e, Workload::empty, t))), "count");
    for (Engine e : swp_engines) {
      const std::string name = key("ns_per_task", e, Workload::device, t);
      metric(name, median(ns.at(name)), "ns");
      metric(name + "_min", minimum(ns.at(name)), "ns");
      metric(key("allocs_per_task", e, Workload::device, t),
             median(allocs.at(key("allocs_per_task", e, Workload::device, t))), "count");
    }
    if (!cpu) continue;
    const double tbb_cpu = median(ns.at(key("ns_per_task", Engine::tbb, Workload::cpu, t)));
    for (Engine e : {Engine::data_flow, Engine::clock, Engine::tbb}) {
      const std::string name = key("ns_per_task", e, Workload::cpu, t);
      metric(name, median(ns.at(name)), "ns");
      if (e != Engine::tbb)
        metric(std::string(engine_label(e)) + "_over_tbb_cpu" + t.suffix,
               median(ns.at(name)) / tbb_cpu, "ratio");
    }
  }
  if (cpu) {
    // 1 thread's time over 2 threads': what the second thread adds to real work (2: ideal).
    for (Engine e : {Engine::data_flow, Engine::clock, Engine::tbb}) {
      const double one = median(ns.at(key("ns_per_task", e, Workload::cpu, thread_counts[1])));
      const double two = median(ns.at(key("ns_per_task", e, Workload::cpu, thread_counts[0])));
      metric(std::string("speedup_2t_") + engine_label(e) + "_cpu", one / two, "ratio");
    }
  }

  if (options.alloc_sites > 0) {
    prime_site_capture();
    const Window capture{.warmup = options.warmup,
                         .iters = std::min(options.device_iters, options.iters),
                         .capture_sites = options.alloc_sites};
    for (Workload workload : {Workload::empty, Workload::device}) {
      for (Engine e : swp_engines) {
        std::fprintf(stderr, "alloc-sites %s %s, 2 threads:\n", engine_label(e),
                     workload == Workload::device ? "device" : "empty");
        measure_swp(e, workload, 1, capture);
        print_sites(stderr);
      }
    }
  }
}

}  // namespace swp_bench
