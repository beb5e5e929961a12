#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "profile_metrics.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/engine/errors.hpp"
#include "swp/tune/plan_tuner.hpp"
#include "swp/tune/profiled_costs.hpp"

namespace swp::cli {

namespace {

struct TuneFlags {
  std::string path;
  TuneOptions options;
  std::string out_path;    // --out: the plan goes there, the metric lines to stdout
  std::string costs_path;  // --costs: `swp profile` output whose exposed times are simulated
  std::string costless_on = "device";  // --costless-on
};

// The measured costs of --costs for a plan of `tasks` tasks, or nothing after printing why.
std::optional<ProfileResult> read_costs(const std::string& path, std::size_t tasks) {
  try {
    if (path == "-") return read_profile_metrics(std::cin, "<stdin>", tasks);
    errno = 0;
    std::ifstream in(path);
    if (!in) {
      print_io_error("read --costs", path, "open failed");
      return std::nullopt;
    }
    return read_profile_metrics(in, path, tasks);
  } catch (const std::runtime_error& e) {
    print_error(std::string("--costs ") + e.what());
    return std::nullopt;
  }
}

void metric(std::FILE* to, const char* name, double value, const char* unit) {
  std::fprintf(to, "metric %s %.6g %s\n", name, value, unit);
}

int tune(const TuneFlags& flags) {
  if (flags.path == "-" && flags.costs_path == "-") {
    print_error("the plan and --costs cannot both be read from standard input");
    return Exit::bad_usage;
  }
  auto plan = load_checked(flags.path, Strictness::valid);
  if (!plan) return Exit::invalid_plan;
  TuneOptions options = flags.options;
  if (options.max_depth == 0 && plan->inspection.graph.depth() > max_tune_depth)
    print_warning(flags.path + ": the plan's depth " +
                  std::to_string(plan->inspection.graph.depth()) +
                  " is above the tuner's limit of " + std::to_string(max_tune_depth) +
                  ": searching under a cap of " + std::to_string(max_tune_depth) +
                  " and keeping the input if nothing there is faster (see --max-depth)");
  if (!flags.costs_path.empty()) {
    options.measured = read_costs(flags.costs_path, plan->plan.tasks.size());
    if (!options.measured) return Exit::bad_usage;
    options.costless_on = flags.costless_on == "cpu" ? MeasuredTimeOn::cpu : MeasuredTimeOn::device;
    // Checked here, so that what the profile gets wrong is named by --costs and nothing else
    // is (tune_plan applies it again).
    try {
      (void)with_profiled_costs(plan->plan, *options.measured, options.costless_on);
    } catch (const std::invalid_argument& e) {  // tasks the plan lacks, times past the limit
      print_error("--costs '" + flags.costs_path + "': " + e.what());
      return Exit::bad_usage;
    }
  }
  // Opened before the search, so a bad path costs no search.
  std::ofstream out_file;
  if (!flags.out_path.empty()) {
    errno = 0;
    out_file.open(flags.out_path, std::ios::out | std::ios::trunc);
    if (!out_file) {
      print_io_error("write", flags.out_path, "open failed");
      return Exit::bad_usage;
    }
  }
  const auto started = std::chrono::steady_clock::now();
  TuneResult result;
  try {
    result = tune_plan(plan->plan, options);
  } catch (const std::invalid_argument& e) {  // runs longer than their clock can count
    print_error(e.what());
    return Exit::bad_usage;
  } catch (const TaskError& e) {
    print_error(e.what());
    return Exit::invalid_plan;
  } catch (const PipelineTimeout& e) {
    print_error(e.what());
    return Exit::invalid_plan;
  }
  const double search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (result.kept_deep_input)
    print_warning(flags.path + ": no plan under the tuner's limit of " +
                  std::to_string(max_tune_depth) + " is faster than the input (depth " +
                  std::to_string(result.baseline_depth) + "): printing the input unchanged");

  std::FILE* metrics = stderr;
  if (out_file.is_open()) {
    out_file << plan_to_json(result.best);
    out_file.close();
    if (!out_file) {
      print_error("cannot write '" + flags.out_path + "': writing failed");
      return Exit::bad_usage;
    }
    metrics = stdout;
  } else {
    std::cout << plan_to_json(result.best) << std::flush;
  }
  metric(metrics, "us_per_iter", result.us_per_iter, "us");
  metric(metrics, "baseline_us_per_iter", result.baseline_us_per_iter, "us");
  metric(metrics, "speedup", result.speedup(), "ratio");
  metric(metrics, "depth", result.depth, "count");
  metric(metrics, "baseline_depth", result.baseline_depth, "count");
  metric(metrics, "max_depth", result.max_depth, "count");
  metric(metrics, "candidates", static_cast<double>(result.candidates), "count");
  metric(metrics, "exhaustive", result.exhaustive ? 1 : 0, "bool");
  metric(metrics, "search_ms", search_ms, "ms");
  return Exit::ok;
}

}  // namespace

void add_tune_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "tune",
      "search the plan's stage assignments under a depth cap on the sim backend (clock engine) "
      "and print the fastest plan as JSON");
  auto flags = std::make_shared<TuneFlags>();
  add_plan_argument(*cmd, flags->path);
  cmd->add_option("--max-depth", flags->options.max_depth,
                  "memory cap: stages 0..D-1, at most D iterations in flight; default: the "
                  "plan's depth, at most 64")
      ->check(in_range(1, max_tune_depth));
  cmd->add_option("--iters", flags->options.iters,
                  "iterations of the final measurement of the best candidates and the input")
      ->check(in_range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--search-iters", flags->options.search_iters,
                  "iterations per candidate during the search")
      ->check(in_range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--max-candidates", flags->options.max_candidates,
                  "exhaustive up to this many stage assignments, local search beyond")
      ->check(in_range(1, 10'000'000))
      ->capture_default_str();
  auto* costs = cmd->add_option(
      "--costs", flags->costs_path,
      "simulate with the exposed times `swp profile` measured (its output, a file or "
      "- for stdin) instead of the plan's synthetic costs");
  cmd->add_option("--costless-on", flags->costless_on,
                  "with --costs: where the measured time of a task without a plan cost goes (its "
                  "stream's device time, or its lane's CPU time)")
      ->check(CLI::IsMember({"device", "cpu"}))
      ->capture_default_str()
      ->needs(costs);
  cmd->add_option("--out", flags->out_path,
                  "write the plan JSON to this file and the metric lines to standard output");
  cmd->callback([&action, flags] { action = [flags] { return tune(*flags); }; });
}

}  // namespace swp::cli
