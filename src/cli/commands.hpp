#pragma once
// Registration of the `swp` subcommands. Each subcommand's callback stores the action to run
// after parsing in `action`; main() runs it and returns its exit code.

#include <CLI/CLI.hpp>
#include <functional>

namespace swp::cli {

using Action = std::function<int()>;

/// validate, order, schedule, analyze: the plan-model commands.
void add_plan_commands(CLI::App& app, Action& action);

/// run: execute a plan's synthetic costs on an engine and print metric lines.
void add_run_command(CLI::App& app, Action& action);

/// tune: the fastest stage assignment of a plan under a depth cap, simulated on sim.
void add_tune_command(CLI::App& app, Action& action);

/// preset: the TorchRec pipelines of seed 000 as plan JSON (`--list` names them).
void add_preset_command(CLI::App& app, Action& action);

/// profile: per-task exposed time of a plan's synthetic costs (TaskProfiler).
void add_profile_command(CLI::App& app, Action& action);

/// pp: the pipeline-parallel model of seed 002 (stages, groups, estimate, search) and the
/// event-level schedule simulation (simulate).
void add_pp_command(CLI::App& app, Action& action);
/// data gen|check: write a test dataset of record files; verify every checksum of one.
void add_data_command(CLI::App& app, Action& action);

}  // namespace swp::cli
