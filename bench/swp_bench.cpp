// swp-bench: benchmarks printing `metric <name> <value> <unit>` lines, ratios measured in the
// same run (docs/benchmarks.md).
//
//   swp-bench dispatch [--rounds N] [--iters N] [--warmup N] [--work-ms M] [--settle-ms M]
//                      [--threads 1,2] [--work-us 0,1,5] [--co-runner] [--steps-per-us X]
//                      [--only SYSTEM] [--alloc-sites K] [--reference] [--next]
//                      [--fast-paths SPEC]
//                                    a 4-stage chain with the same bodies in both engines,
//                                    oneTBB, Taskflow and a serial loop: ns and allocations per
//                                    task, ratios; 1 and 2 threads, empty and working stages
//   swp-bench overlap  [--iters N]   3-stage overlap scenario on host and sim, both engines
//   swp-bench jitter   [--iters N]   the same with a jittering loader: data-flow vs clock
//   swp-bench soak     [--iters N] [--warmup N]
//                                    RSS growth over a long run: both engines and `swp run`
//   swp-bench pp       [--stages P] [--microbatches M] [--rounds N]
//                                    the event-level PP simulator (p 64, m 1024 by default)
//   swp-bench loader   [--records N] [--bytes B] [--files F] [--batch N] [--prefetch N]
//                      [--read-threads N] [--rounds N] [--dir D]
//                                    the data loader vs plain reads from the page cache
//   swp-bench construct [--rounds N]  building a Plan<Ctx> and both pipelines at 10k and 100k
//                                    tasks: CPU ms, bytes and growth (target <= 11x for 10x the
//                                    tasks), beside a copy of as many bytes
//   swp-bench idle     [--workers N] [--ms M]
//                                    CPU per second of a runtime with nothing to run: fresh,
//                                    between runs, a run in flight whose caller is away
//   swp-bench occupancy [--rounds N] [--work-us 1,5] [--threads N] [--work-ms M] [--co-runner]
//                                    the dispatch chain with work: the threads' share of time in
//                                    bodies, convoys, and the swp engines' retirement lag

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "construct.hpp"
#include "dispatch.hpp"
#include "idle.hpp"
#include "loader.hpp"
#include "occupancy.hpp"
#include "pp_sim.hpp"
#include "scenarios.hpp"
#include "soak.hpp"

int main(int argc, char** argv) {
  CLI::App app{"swp-bench: swp benchmarks (metric lines)"};
  app.require_subcommand(1);
  swp_bench::DispatchOptions d;
  int scenario_iters = 400;
  auto* dispatch = app.add_subcommand(
      "dispatch",
      "4-stage chain, same bodies everywhere: swp engines vs oneTBB, Taskflow and a serial loop");
  dispatch->add_option("--rounds", d.rounds, "interleaved rounds (the reported figures use >= 7)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  dispatch->add_option("--iters", d.iters, "window iterations per measurement, empty bodies")
      ->check(CLI::Range(1L, 100'000'000L))
      ->capture_default_str();
  dispatch->add_option("--warmup", d.warmup, "iterations before each window (at most a quarter)")
      ->check(CLI::Range(1L, 100'000'000L))
      ->capture_default_str();
  dispatch
      ->add_option("--work-ms", d.work_ms,
                   "window of a measurement with work, in ms of serial work (sets its iterations)")
      ->check(CLI::Range(0.001, 100'000.0))
      ->capture_default_str();
  dispatch->add_option("--settle-ms", d.settle_ms, "idle time before every measurement")
      ->check(CLI::Range(0, 10'000))
      ->capture_default_str();
  dispatch->add_option("--threads", d.threads, "thread counts, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  dispatch->add_option("--work-us", d.work_us, "work per stage in us, comma-separated (0: empty)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 10'000.0))
      ->capture_default_str();
  dispatch->add_flag("--co-runner,--busy-core", d.co_runner,
                     "measure beside a process spinning on the last core");
  dispatch
      ->add_option("--steps-per-us", d.steps_per_us,
                   "stage body steps per us (default: calibrated at start)")
      ->check(CLI::Range(0.0, 1e6));
  dispatch->add_flag("--reference", d.reference,
                     "also measure both engines on their reference path (fast paths none): "
                     "dataflow_ref, clock_ref");
  dispatch->add_flag("--next", d.next,
                     "also measure both engines driven by co_await pipe.next() from a coroutine "
                     "on `threads` workers: dataflow_next, clock_next");
  dispatch->add_option("--fast-paths", d.fast_paths,
                       "the fast paths of dataflow and clock: all, none, or a list such as "
                       "lane_claims,in_place (default: SWP_FAST_PATHS, else all)");
  dispatch
      ->add_option("--only", d.only,
                   "one measurement of serial|dataflow|clock|tbb|taskflow|dataflow_ref|clock_ref|"
                   "dataflow_next|clock_next (for callgrind): the first --threads and --work-us "
                   "values, --iters iterations")
      ->check(CLI::IsMember({"serial", "dataflow", "clock", "tbb", "taskflow", "dataflow_ref",
                             "clock_ref", "dataflow_next", "clock_next"}));
  dispatch
      ->add_option("--alloc-sites", d.alloc_sites,
                   "print the call stacks of this many steady-state allocations (stderr)")
      ->check(CLI::Range(0, 64));
  auto* overlap = app.add_subcommand("overlap", "3-stage device overlap: efficiency, host and sim");
  overlap->add_option("--iters", scenario_iters, "iterations")->check(CLI::Range(20, 1'000'000));
  auto* jitter = app.add_subcommand("jitter", "3-stage overlap with a jittering loader");
  jitter->add_option("--iters", scenario_iters, "iterations")->check(CLI::Range(20, 1'000'000));
  swp_bench::SoakOptions soak_options;
  auto* soak = app.add_subcommand(
      "soak", "RSS growth after warm-up over a long run: both engines and the swp run path");
  soak->add_option("--iters", soak_options.iters, "iterations per run")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{100'000'000}))
      ->capture_default_str();
  soak->add_option("--warmup", soak_options.warmup,
                   "iterations before the first RSS reading (default: a tenth of --iters)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}));
  int pp_stages = 64, pp_microbatches = 1024, pp_rounds = 3;
  auto* pp = app.add_subcommand(
      "pp", "event-level pipeline-parallel simulation: gpipe, 1f1b, interleaved at p x m");
  pp->add_option("--stages", pp_stages, "pipeline stages")->check(CLI::Range(1, 4096));
  pp->add_option("--microbatches", pp_microbatches, "microbatches (a multiple of --stages)")
      ->check(CLI::Range(1, 1'000'000));
  pp->add_option("--rounds", pp_rounds, "runs per schedule (the fastest is reported)")
      ->check(CLI::Range(1, 100));
  swp_bench::LoaderBenchOptions loader_options;
  auto* loader = app.add_subcommand(
      "loader", "data loader MB/s vs plain sequential reads of the same files (page cache)");
  loader->add_option("--records", loader_options.records, "records of the generated dataset")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->capture_default_str();
  loader->add_option("--bytes", loader_options.bytes, "payload bytes per record")
      ->check(CLI::Range(std::uint64_t{8}, std::uint64_t{1} << 30))
      ->capture_default_str();
  loader->add_option("--files", loader_options.files, "files of the generated dataset")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 16))
      ->capture_default_str();
  loader->add_option("--batch", loader_options.batch_records, "records per batch")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->capture_default_str();
  loader->add_option("--prefetch", loader_options.prefetch, "batches read ahead")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 16))
      ->capture_default_str();
  loader->add_option("--read-threads", loader_options.read_threads, "threads of the pread reader")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{256}))
      ->capture_default_str();
  loader->add_option("--rounds", loader_options.rounds, "interleaved rounds (medians)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  loader->add_option("--dir", loader_options.dir,
                     "dataset directory (generated there when missing; default: a temporary one)");
  swp_bench::ConstructOptions construct_options;
  auto* construct = app.add_subcommand(
      "construct", "building a Plan<Ctx> and both pipelines at 10k and 100k tasks (CPU ms)");
  construct
      ->add_option("--rounds", construct_options.rounds,
                   "interleaved rounds, each size measured once per round (medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  swp_bench::IdleOptions idle_options;
  auto* idle = app.add_subcommand(
      "idle", "CPU ms per second of a runtime with nothing to run (target < 1)");
  idle->add_option("--workers", idle_options.workers, "the runtime's pool workers")
      ->check(CLI::Range(1U, 256U))
      ->capture_default_str();
  idle->add_option("--ms", idle_options.ms, "wall time each state is measured over")
      ->check(CLI::Range(10, 60'000))
      ->capture_default_str();
  swp_bench::OccupancyOptions occupancy_options;
  auto* occupancy = app.add_subcommand(
      "occupancy",
      "the dispatch chain with work: threads' share in bodies, convoys, retirement lag");
  occupancy->add_option("--rounds", occupancy_options.rounds, "interleaved rounds (medians)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  occupancy
      ->add_option("--work-us", occupancy_options.work_us, "work per stage in us, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(0.01, 10'000.0))
      ->capture_default_str();
  occupancy->add_option("--threads", occupancy_options.threads, "threads of every system")
      ->check(CLI::Range(1U, 256U))
      ->capture_default_str();
  occupancy
      ->add_option("--work-ms", occupancy_options.work_ms,
                   "window of a measurement, in ms of serial work (sets its iterations)")
      ->check(CLI::Range(1.0, 100'000.0))
      ->capture_default_str();
  occupancy->add_flag("--co-runner", occupancy_options.co_runner,
                      "measure beside a process spinning on the last core");
  CLI11_PARSE(app, argc, argv);

  try {
    if (dispatch->parsed()) swp_bench::run_dispatch(d);
    if (overlap->parsed()) swp_bench::run_scenario("overlap", false, scenario_iters);
    if (jitter->parsed()) swp_bench::run_scenario("jitter", true, scenario_iters);
    if (soak->parsed()) swp_bench::run_soak(soak_options);
    if (pp->parsed()) swp_bench::run_pp_sim(pp_stages, pp_microbatches, pp_rounds);
    if (loader->parsed()) swp_bench::run_loader(loader_options);
    if (construct->parsed()) swp_bench::run_construct(construct_options);
    if (idle->parsed()) swp_bench::run_idle(idle_options);
    if (occupancy->parsed()) swp_bench::run_occupancy(occupancy_options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
