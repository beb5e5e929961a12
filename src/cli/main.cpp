// swp: the command-line face of the library (contract in DESIGN.md).

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "plan_input.hpp"
#include "swp/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"swp: software pipelining plans, schedules and runs"};
  app.set_version_flag("--version", SWP_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  swp::cli::Action action;
  swp::cli::add_plan_commands(app, action);
  swp::cli::add_run_command(app, action);
  swp::cli::add_preset_command(app, action);
  swp::cli::add_tune_command(app, action);
  swp::cli::add_profile_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the parse error
    return code == 0 ? swp::cli::Exit::ok : swp::cli::Exit::bad_usage;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return swp::cli::Exit::invalid_plan;
  }
}
