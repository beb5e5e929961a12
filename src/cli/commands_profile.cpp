// swp profile: per-task exposed time of a plan's synthetic costs (TaskProfiler).

#include <cstddef>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/device/stream_limit_error.hpp"
#include "swp/engine/errors.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace swp::cli {

namespace {

struct ProfileFlags {
  std::string path;
  std::string backend = "sim";
  ProfileOptions options;
  std::vector<std::string> skip;
  unsigned workers = ThreadPoolScheduler::default_workers();
  // --max-host-streams: RuntimeOptions::max_host_streams
  std::size_t max_host_streams = default_max_host_streams;
};

int profile(const ProfileFlags& flags, bool max_host_streams_given) {
  Backend backend{};
  parse_backend(flags.backend, backend);  // CLI11 restricted it to known names
  if (max_host_streams_given && backend != Backend::host) {
    print_error("--max-host-streams applies to --backend host only; " + flags.backend +
                " starts no thread per stream and has no such limit");
    return Exit::bad_usage;
  }
  auto plan = load_checked(flags.path, Strictness::valid);
  if (!plan) return Exit::invalid_plan;
  SyntheticProfileOptions options;
  options.profile = flags.options;
  options.profile.skip_tasks = std::set<std::string>(flags.skip.begin(), flags.skip.end());
  options.runtime.backend = backend;
  options.runtime.workers = flags.workers;
  options.runtime.max_host_streams = flags.max_host_streams;
  ProfileResult result;
  try {
    result = profile_synthetic(plan->plan, options);
  } catch (const std::invalid_argument& e) {  // --skip naming no task; too long a profile
    print_error(e.what());
    return Exit::bad_usage;
  } catch (const StreamLimitError& e) {  // the host device refused a stream of the plan
    // Any other std::length_error goes to run_command_line's handler, without the hint.
    print_error(backend == Backend::host ? host_stream_limit_error(e.what(), flags.max_host_streams)
                                         : std::string(e.what()));
    return Exit::invalid_plan;
  } catch (const TaskError& e) {
    print_error(e.what());
    return Exit::invalid_plan;
  }
  std::cout << result.format_report() << '\n';
  std::printf("metric baseline_us_per_iter %.6g us\n", result.baseline_s * 1e6);
  for (const auto& task : result.tasks)
    std::printf("metric exposed_us.%s %.6g us\n", task.task.c_str(), task.exposed_s * 1e6);
  std::printf("metric exposed_sum_us %.6g us\n", result.sum_s() * 1e6);
  return Exit::ok;
}

}  // namespace

void add_profile_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "profile", "per-task exposed time of a plan's synthetic costs (serial runs, one task "
                 "shortcut at a time)");
  auto flags = std::make_shared<ProfileFlags>();
  add_plan_argument(*cmd, flags->path);
  cmd->add_option("--backend", flags->backend, "device backend (sim: exact virtual time)")
      ->check(device_backend())
      ->capture_default_str();
  cmd->add_option("--warmup", flags->options.warmup, "unmeasured serial iterations first")
      ->check(in_range(0, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--measure", flags->options.measure, "serial iterations per timed round")
      ->check(in_range(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--rounds", flags->options.rounds, "timed rounds (the median counts)")
      ->check(in_range(1, 10'000))
      ->capture_default_str();
  cmd->add_option("--skip", flags->skip, "tasks not to profile (comma separated)")->delimiter(',');
  cmd->add_option("--workers", flags->workers, "host scheduler worker threads")
      ->check(in_range(0, 256))
      ->capture_default_str();
  auto* max_host_streams = add_max_host_streams(*cmd, flags->max_host_streams);
  cmd->callback([&action, flags, max_host_streams] {
    action = [flags, max_host_streams] { return profile(*flags, max_host_streams->count() > 0); };
  });
}

}  // namespace swp::cli
