#pragma once
// Shared by the `swp pp` subcommands.

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace swp::cli {

/// Accepts a finite decimal number >= 0; otherwise `expected a number >= 0, got 'VALUE'`.
CLI::Validator non_negative_number();

/// Accepts a decimal number in 0..`max`; otherwise `expected a number in [0, MAX], got
/// 'VALUE'` (MAX as %.10g: 1e+12).
CLI::Validator non_negative_number(double max);

/// Prints `metric NAME VALUE UNIT` on stdout (ten significant digits).
void pp_metric(const char* name, double value, const char* unit);

/// `swp pp simulate`, added under the `pp` subcommand.
void add_pp_simulate_command(CLI::App& pp, Action& action);

}  // namespace swp::cli
