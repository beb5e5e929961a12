#include "dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "busy_core.hpp"
#include "counting_allocator.hpp"
#include "dispatch_systems.hpp"
#include "metric.hpp"
#include "stage_body.hpp"

namespace swp_bench {

namespace {

// One (thread count, work size) combination: every system is measured once per round in it.
struct DispatchConfig {
  unsigned threads;
  double work_us;
  ChainRun run;
};

// "", "_1us", "_0.5us": the work part of a metric name.
std::string work_part(double work_us) {
  if (work_us == 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "_%gus", work_us);
  return text;
}

// What a metric name says about one measurement: dataflow_corunner_5us_2t.
struct NameParts {
  std::string co_runner;  // "" or "_corunner"
  std::string work;       // work_part()
  std::string threads;    // "_2t"
};

NameParts name_parts(const DispatchConfig& c, bool co_runner) {
  return {co_runner ? "_corunner" : "", work_part(c.work_us), "_" + std::to_string(c.threads) + "t"};
}

std::string tag(System s, const NameParts& p) {
  return system_label(s) + p.co_runner + p.work + p.threads;
}

std::string ratio_name(System s, System reference, const NameParts& p) {
  return system_label(s) + p.co_runner + p.work + "_over_" + system_label(reference) + p.threads;
}

// Window iterations: `iters` for empty bodies, else about `work_ms` of serial work.
long window_iters(const DispatchOptions& o, double work_us) {
  if (work_us == 0) return o.iters;
  return std::max(1L, std::lround(o.work_ms * 1000.0 / (chain_stages * work_us)));
}

ChainRun chain_run(const DispatchOptions& o, unsigned threads, double work_us, long iters,
                   double steps_per_us) {
  return {.threads = threads,
          .steps = static_cast<std::uint64_t>(std::llround(work_us * steps_per_us)),
          .fast_paths = o.fast_paths.empty() ? std::nullopt
                                             : std::optional(swp::FastPaths::parse(o.fast_paths)),
          .warmup = std::clamp(o.warmup, 1L, std::max(1L, iters / 4)),
          .iters = iters,
          .settle_ms = o.settle_ms};
}

void validate(const DispatchOptions& o) {
  if (o.rounds < 1 || o.iters < 1 || o.warmup < 1)
    throw std::invalid_argument("dispatch: --rounds, --iters and --warmup must be at least 1");
  if (!(o.work_ms > 0)) throw std::invalid_argument("dispatch: --work-ms must be above 0");
  if (o.settle_ms < 0) throw std::invalid_argument("dispatch: --settle-ms must be at least 0");
  if (o.threads.empty() || o.work_us.empty())
    throw std::invalid_argument("dispatch: --threads and --work-us need at least one value");
  for (unsigned t : o.threads)
    if (t < 1) throw std::invalid_argument("dispatch: --threads values must be at least 1");
  for (double w : o.work_us)
    if (!(w >= 0)) throw std::invalid_argument("dispatch: --work-us values must be at least 0");
  if (!(o.steps_per_us >= 0))
    throw std::invalid_argument("dispatch: --steps-per-us must be at least 0");
  if (!o.only.empty() && !system_of_label(o.only))
    throw std::invalid_argument("dispatch: --only " + o.only +
                                ": not serial, dataflow, clock, tbb, taskflow, dataflow_ref or "
                                "clock_ref");
  if (!o.fast_paths.empty()) {
    try {
      (void)swp::FastPaths::parse(o.fast_paths);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("dispatch: --fast-paths: ") + e.what());
    }
  }
}

// The systems of a round: the five, the swp engines' reference paths with --reference, and
// their next()-driven runs with --next.
std::vector<System> measured_systems(const DispatchOptions& o) {
  std::vector<System> systems(std::begin(all_systems), std::end(all_systems));
  if (o.reference)
    systems.insert(systems.end(), std::begin(reference_systems), std::end(reference_systems));
  if (o.next) systems.insert(systems.end(), std::begin(next_systems), std::end(next_systems));
  return systems;
}

// The calibration runs before any co-runner starts, on a quiet core.
double steps_per_us(const DispatchOptions& o) {
  if (o.steps_per_us > 0) return o.steps_per_us;
  // --only measures the first work size alone.
  const auto end = o.only.empty() ? o.work_us.end() : o.work_us.begin() + 1;
  const bool work = std::any_of(o.work_us.begin(), end, [](double w) { return w > 0; });
  return work ? calibrate_steps_per_us() : 0;
}

using Samples = std::map<std::string, std::vector<double>>;

void measure_rounds(const DispatchOptions& o, const std::vector<DispatchConfig>& configs,
                    Samples& ns, Samples& allocs) {
  const std::vector<System> systems = measured_systems(o);
  const std::size_t system_count = systems.size();
  for (int round = 0; round < o.rounds; ++round) {
    for (const DispatchConfig& c : configs) {
      const NameParts parts = name_parts(c, o.co_runner);
      // Rotated by one each round: every system is measured first, second, ... in turn.
      for (std::size_t k = 0; k < system_count; ++k) {
        const System s = systems[(k + static_cast<std::size_t>(round)) % system_count];
        const ChainSample sample = measure_chain(s, c.run);
        ns[tag(s, parts)].push_back(sample.ns_per_task);
        allocs[tag(s, parts)].push_back(sample.allocs_per_task);
        // Every sample on stderr, so that a reader can see the spread behind the medians.
        std::fprintf(stderr, "dispatch: round %d %s %.1f ns, %.4g allocs per task\n", round + 1,
                     tag(s, parts).c_str(), sample.ns_per_task, sample.allocs_per_task);
      }
    }
  }
}

void report_config(const DispatchOptions& o, const DispatchConfig& c, const Samples& ns,
                   const Samples& allocs) {
  const bool co_runner = o.co_runner;
  const NameParts parts = name_parts(c, co_runner);
  const std::vector<System> systems = measured_systems(o);
  for (System s : systems) {
    const std::string name = "ns_per_task_" + tag(s, parts);
    metric(name, median(ns.at(tag(s, parts))), "ns");
    metric(name + "_min", minimum(ns.at(tag(s, parts))), "ns");
  }
  for (System s : systems)
    if (s != System::serial)
      metric("allocs_per_task_" + tag(s, parts), median(allocs.at(tag(s, parts))), "count");
  const auto ratio = [&](System s, System reference) {
    metric(ratio_name(s, reference, parts),
           median(ns.at(tag(s, parts))) / median(ns.at(tag(reference, parts))), "ratio");
  };
  for (System s : {System::data_flow, System::clock, System::tbb}) ratio(s, System::taskflow);
  for (System s : {System::data_flow, System::clock}) ratio(s, System::tbb);
  for (System s : {System::data_flow, System::clock, System::tbb, System::taskflow})
    ratio(s, System::serial);
  if (o.reference) {
    // What the fast paths win (below 1) or cost (above 1), each engine against its reference.
    ratio(System::data_flow, System::data_flow_ref);
    ratio(System::clock, System::clock_ref);
    for (System s : reference_systems) {
      ratio(s, System::taskflow);
      ratio(s, System::serial);
    }
  }
  if (o.next) {
    for (System s : next_systems) {
      ratio(s, System::taskflow);
      ratio(s, System::serial);
    }
  }
}

// 1 thread's median over 2 threads' for work that takes time: what the second thread adds
// (2 is ideal).
void report_speedups(const std::vector<DispatchConfig>& configs, bool co_runner,
                     const Samples& ns) {
  for (const DispatchConfig& two : configs) {
    if (two.threads != 2 || two.work_us == 0) continue;
    for (const DispatchConfig& one : configs) {
      if (one.threads != 1 || one.work_us != two.work_us) continue;
      for (System s : {System::data_flow, System::clock, System::tbb, System::taskflow})
        metric(std::string("speedup_2t_") + system_label(s) + (co_runner ? "_corunner" : "") +
                   work_part(two.work_us),
               median(ns.at(tag(s, name_parts(one, co_runner)))) /
                   median(ns.at(tag(s, name_parts(two, co_runner)))),
               "ratio");
    }
  }
}

// The names of the benchmark before Taskflow and stage bodies (2 threads, empty tasks, no
// thread suffix), still printed for the programs that read them; the _1t names are unchanged.
void report_legacy_names(const std::vector<DispatchConfig>& configs, bool co_runner,
                         const Samples& ns, const Samples& allocs) {
  for (const DispatchConfig& c : configs) {
    if (c.threads != 2 || c.work_us != 0) continue;
    const NameParts parts = name_parts(c, co_runner);
    for (System s : {System::data_flow, System::clock, System::tbb}) {
      const std::string name = std::string("ns_per_task_") + system_label(s);
      metric(name, median(ns.at(tag(s, parts))), "ns");
      metric(name + "_min", minimum(ns.at(tag(s, parts))), "ns");
    }
    for (System s : {System::data_flow, System::clock}) {
      metric(std::string(system_label(s)) + "_over_tbb",
             median(ns.at(tag(s, parts))) / median(ns.at(tag(System::tbb, parts))), "ratio");
      metric(std::string("allocs_per_task_") + system_label(s), median(allocs.at(tag(s, parts))),
             "count");
    }
  }
}

// --only: one measurement, for callgrind (docs/benchmarks.md, "Instructions per task").
void run_only(const DispatchOptions& o, double steps) {
  const System s = *system_of_label(o.only);
  DispatchConfig c{o.threads.front(), o.work_us.front(), {}};
  c.run = chain_run(o, c.threads, c.work_us, o.iters, steps);
  const ChainSample sample = measure_chain(s, c.run);
  const NameParts parts = name_parts(c, o.co_runner);
  metric("ns_per_task_" + tag(s, parts), sample.ns_per_task, "ns");
  metric("allocs_per_task_" + tag(s, parts), sample.allocs_per_task, "count");
}

void print_alloc_sites(const DispatchOptions& o) {
  prime_site_capture();
  ChainRun run = chain_run(o, 2, 0, o.iters, 0);
  run.capture_sites = o.alloc_sites;
  for (System s : {System::data_flow, System::clock}) {
    std::fprintf(stderr, "alloc-sites %s, empty bodies, 2 threads:\n", system_label(s));
    measure_chain(s, run);
    print_sites(stderr);
  }
}

}  // namespace

void run_dispatch(const DispatchOptions& o) {
  validate(o);
  const double steps = steps_per_us(o);
  std::unique_ptr<BusyCore> co_runner;
  if (o.co_runner) {
    co_runner = std::make_unique<BusyCore>();
    std::fprintf(stderr, "dispatch: co-runner process on core %d\n", co_runner->core());
  }
  metric("busy_core", o.co_runner ? 1 : 0, "flag");
  if (steps > 0) metric("steps_per_us", steps, "count");
  if (!o.only.empty()) {
    run_only(o, steps);
    return;
  }
  metric("dispatch_rounds", o.rounds, "count");
  metric("dispatch_settle_ms", o.settle_ms, "ms");

  std::vector<DispatchConfig> configs;
  for (double w : o.work_us) {
    const long iters = window_iters(o, w);
    metric("dispatch_iters" + work_part(w), static_cast<double>(iters), "count");
    for (unsigned t : o.threads) configs.push_back({t, w, chain_run(o, t, w, iters, steps)});
  }
  Samples ns, allocs;
  measure_rounds(o, configs, ns, allocs);
  if (o.reference || !o.fast_paths.empty())
    std::fprintf(stderr, "dispatch: dataflow and clock on fast paths %s\n",
                 o.fast_paths.empty() ? swp::to_string(swp::FastPaths::from_environment()).c_str()
                                      : o.fast_paths.c_str());
  for (const DispatchConfig& c : configs) report_config(o, c, ns, allocs);
  report_speedups(configs, o.co_runner, ns);
  report_legacy_names(configs, o.co_runner, ns, allocs);
  if (o.alloc_sites > 0) print_alloc_sites(o);
}

}  // namespace swp_bench
