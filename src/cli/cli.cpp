#include "cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "plan_input.hpp"
#include "swp/config.hpp"
#if SWP_HAVE_CUDA
#include "swp/device/cuda/cuda_device.hpp"
#endif

namespace swp::cli {

namespace {

std::string subcommand_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// The subcommand named by the first argument that is not an option, if it names none: CLI11
// would only say "A subcommand is required", even for `swp frobnicate --help`.
std::string unknown_subcommand(CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return {};
  const std::string_view first = argv[1];
  if (first.empty() || first.front() == '-') return {};
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (sub->check_name(std::string(first))) return {};
  return std::string(first);
}

// CLI11's own parse errors, in the contract's one-line form, naming the subcommand and where
// its help is. Help and version requests are not errors: they print to stdout and succeed.
int usage_error(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    app.exit(e);  // help or version, on stdout
    return Exit::ok;
  }
  std::string message = e.what();
  std::string command = "swp";
  // The subcommand path as far as it was parsed ("swp pp simulate").
  CLI::App* level = &app;
  while (!level->get_subcommands().empty()) {
    level = level->get_subcommands().front();
    command += " " + level->get_name();
  }
  // A command that needs a subcommand (swp, swp pp) got none it knows.
  if (level->get_require_subcommand_min() > 0 &&
      dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    auto unexpected = level->remaining();
    if (unexpected.empty()) unexpected = app.remaining();
    message = unexpected.empty() ? "no subcommand given"
                                 : "unexpected argument '" + unexpected.front() + "'";
    message += "; name one of " + subcommand_names(*level);
  } else if (message.size() > 1 && std::islower(static_cast<unsigned char>(message[1])) != 0) {
    // CLI11 writes sentences ("The following argument was not expected: x"); ours continue one
    // (but "PLAN is required" keeps its name).
    message.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(message.front())));
  }
  print_error(command + ": " + message + " (see " + command + " --help)");
  return Exit::bad_usage;
}

// Why standard output failed: the final flush's errno when it had something left to write.
// An earlier flush (std::flush, std::endl, a full buffer) that failed dropped its data and left
// nothing to retry, so then an empty write is asked: /dev/full and a closed descriptor refuse
// even that and say why; a full disk does not, and the reason stays unknown.
std::string output_error(int flush_error) {
  if (flush_error != 0) return std::strerror(flush_error);
  errno = 0;
  if (::write(STDOUT_FILENO, "", 0) < 0 && errno != 0) return std::strerror(errno);
  return "write failed";
}

// Output that never arrived (`swp order plan.json > /dev/full`, a full disk) fails the command
// like a --trace file that cannot be written: exit 1 with one error line, not 0 with nothing
// written. Checked once, here, for every subcommand: they all print through stdout (printf,
// and std::cout, which writes through stdout while synced with stdio), whose error flag keeps
// a failed write.
int check_standard_output(int code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  std::cout.flush();
  if (flushed && std::ferror(stdout) == 0 && std::cout.good()) return code;
  // A command that failed has printed its one error line already.
  if (code != Exit::ok) return code;
  print_error("writing standard output: " + output_error(flushed ? 0 : error));
  return Exit::invalid_plan;
}

int run_command_line(int argc, const char* const* argv) {
  CLI::App app{"swp: software pipelining plans, schedules and runs", "swp"};
  app.set_version_flag("--version", SWP_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  Action action;
  add_plan_commands(app, action);
  add_run_command(app, action);
  add_preset_command(app, action);
  add_tune_command(app, action);
  add_profile_command(app, action);
  add_pp_command(app, action);
  add_data_command(app, action);

  if (const auto unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    print_error("unknown subcommand '" + unknown + "'; the subcommands are " +
                subcommand_names(app) + " (see swp --help)");
    return Exit::bad_usage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  }
  try {
    return action();
  } catch (const CommandFailed& failed) {
    return failed.exit;
  } catch (const std::exception& e) {
    print_error(e.what());
    return Exit::invalid_plan;
  }
}

}  // namespace

int run_cli(int argc, const char* const* argv) {
  // A write error an earlier call in this process left (the fuzzer's closed stdout) is not
  // this call's to report.
  std::clearerr(stdout);
  std::cout.clear();
#if SWP_HAVE_CUDA
  // `--backend cuda` selects the backend by name: the CLI links libswp-cuda and registers it
  // before the options list the backends.
  register_cuda_backend();
#endif
  return check_standard_output(run_command_line(argc, argv));
}

}  // namespace swp::cli
