#include <chrono>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/device/nvtx_ranges.hpp"
#include "swp/device/stream_limit_error.hpp"
#include "swp/engine/errors.hpp"
#include "swp/trace/trace_recorder.hpp"
#include "swp/tune/synthetic_run.hpp"
#include "trace_output.hpp"

namespace swp::cli {

namespace {

struct RunFlags {
  std::string path;
  std::string engine = "dataflow";
  std::string backend = "host";
  int max_depth = 0;
  int iters = 200;
  unsigned workers = ThreadPoolScheduler::default_workers();
  std::string trace_path;  // --trace: Chrome-trace JSON
  std::string svg_path;    // --svg: SVG timeline
  bool nvtx = false;       // --nvtx: task ranges for a profiler
  // --max-host-streams: RuntimeOptions::max_host_streams
  std::size_t max_host_streams = default_max_host_streams;
};

void metric(const char* name, double value, const char* unit) {
  std::printf("metric %s %.6g %s\n", name, value, unit);
}

// The contract's metric lines. A run too short for a steady state says so: `nan` for the
// steady-state numbers (what a parser reads as "not a number"), `steady_state 0` and a
// warning naming the --iters that would measure it.
void print_metrics(const SyntheticRunResult& result, const RunFlags& flags) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  metric("us_per_iter", result.steady_state ? result.us_per_iter : nan, "us");
  metric("bound_us_per_iter", result.bound_us_per_iter, "us");
  metric("efficiency", result.steady_state ? result.efficiency : nan, "ratio");
  metric("steady_state", result.steady_state ? 1 : 0, "bool");
  metric("iterations", static_cast<double>(result.stats.iterations), "count");
  metric("elapsed_us", std::chrono::duration<double, std::micro>(result.stats.elapsed).count(),
         "us");
  if (!result.steady_state)
    print_warning("steady state not measured: " + std::to_string(flags.iters) +
                  " iterations with up to " + std::to_string(result.slots) +
                  " in flight are all fill and drain; --iters " +
                  std::to_string(min_steady_iters(result.slots)) +
                  " or more measures us_per_iter and efficiency");
}

int run(const RunFlags& flags, bool max_depth_given, bool max_host_streams_given) {
  EngineKind engine{};
  Backend backend{};
  parse_engine(flags.engine, engine);  // CLI11 restricted both to known names
  parse_backend(flags.backend, backend);
  if (engine == EngineKind::clock && max_depth_given) {
    print_error("--max-depth applies to the data-flow engine only; the clock engine's depth is "
                "max(stage) + 1 of the plan");
    return Exit::bad_usage;
  }
  if (max_host_streams_given && backend != Backend::host) {
    print_error("--max-host-streams applies to --backend host only; " + flags.backend +
                " starts no thread per stream and has no such limit");
    return Exit::bad_usage;
  }
  if (flags.nvtx && !nvtx_compiled()) {
    print_error("--nvtx: this build of swp emits no NVTX ranges (they need CUDA's nvtx3 headers; "
                "configure with -Dcuda=enabled -Dnvtx=enabled)");
    return Exit::bad_usage;
  }
  auto plan = load_checked(flags.path, Strictness::valid);
  if (!plan) return Exit::invalid_plan;
  TraceOutputs outputs;
  if (!outputs.open(flags.trace_path, flags.svg_path)) return Exit::bad_usage;
  TraceRecorder recorder;
  // What the run did is written even when it failed: that is when a timeline helps most.
  auto write_trace = [&](bool failed_run) {
    const std::string title = flags.path + ": " + flags.engine + " engine, " + flags.backend +
                              " backend, " + std::to_string(flags.iters) + " iterations";
    return !outputs.wanted() || outputs.write(recorder.trace(), title, failed_run);
  };
  SyntheticRunOptions options;
  options.engine = engine;
  options.max_depth = flags.max_depth;
  options.iters = flags.iters;
  options.runtime.backend = backend;
  options.runtime.workers = flags.workers;
  options.runtime.max_host_streams = flags.max_host_streams;
  options.nvtx = flags.nvtx;
  if (outputs.wanted()) options.observer = &recorder;
  try {
    const auto result = run_synthetic(plan->plan, options);
    print_metrics(result, flags);
    return write_trace(false) ? Exit::ok : Exit::bad_usage;
  } catch (const std::invalid_argument& e) {  // a run longer than its clock can count
    print_error("--iters " + std::to_string(flags.iters) + ": " + e.what());
    return Exit::bad_usage;
  } catch (const StreamLimitError& e) {  // the host device refused a stream of the plan
    // Refused while the pipeline was built: nothing ran, there is no timeline to write. Any
    // other std::length_error (a container's) names no stream: run_command_line reports it as
    // it does every other exception (its message, exit 1), without the flag's hint.
    print_error(backend == Backend::host ? host_stream_limit_error(e.what(), flags.max_host_streams)
                                         : std::string(e.what()));
    return Exit::invalid_plan;
  } catch (const TaskError& e) {
    print_error(e.what());
  } catch (const PipelineTimeout& e) {
    print_error(e.what());
  }
  write_trace(true);
  return Exit::invalid_plan;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "run", "execute a plan with its synthetic costs and print metric lines");
  auto flags = std::make_shared<RunFlags>();
  add_plan_argument(*cmd, flags->path);
  cmd->add_option("--engine", flags->engine, "execution model")
      ->check(CLI::IsMember({"dataflow", "clock"}))
      ->capture_default_str();
  auto* depth = cmd->add_option("--max-depth", flags->max_depth,
                                "data-flow slots (iterations in flight); default: the plan's depth")
                    ->check(in_range(1, 4096));
  cmd->add_option("--iters", flags->iters, "iterations to run")
      ->check(in_range(1, 100'000'000))
      ->capture_default_str();
  cmd->add_option("--backend", flags->backend, "device backend")
      ->check(device_backend())
      ->capture_default_str();
  cmd->add_option("--workers", flags->workers, "host scheduler worker threads")
      ->check(in_range(0, 256))
      ->capture_default_str();
  auto* max_host_streams = add_max_host_streams(*cmd, flags->max_host_streams);
  cmd->add_option("--trace", flags->trace_path,
                  "write the run's timeline as Chrome-trace JSON (ui.perfetto.dev) to this file");
  cmd->add_option("--svg", flags->svg_path, "write the run's timeline as an SVG picture to this file");
  cmd->add_flag("--nvtx", flags->nvtx,
                "each task instance as an NVTX range SWP/{task}/iter{N}, for a profiler such as "
                "Nsight Systems (builds with NVTX only)");
  cmd->callback([&action, flags, depth, max_host_streams] {
    action = [flags, depth, max_host_streams] {
      return run(*flags, depth->count() > 0, max_host_streams->count() > 0);
    };
  });
}

}  // namespace swp::cli
