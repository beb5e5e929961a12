#pragma once
// How every `swp` subcommand reads the plan it is given, and the exit codes it shares.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "swp/core/plan_graph.hpp"

namespace swp::cli {

/// Exit codes of the CLI contract (DESIGN.md).
enum Exit : int { ok = 0, invalid_plan = 1, bad_usage = 2 };

/// Adds the positional PLAN argument (a file, or `-` for standard input) to `command`.
void add_plan_argument(CLI::App& command, std::string& path);

/// What a loaded plan allows.
enum class Strictness {
  /// Every rule must hold (validate, run): any violation is an error.
  valid,
  /// Structure must hold (names, references, cycles); corollary and depth violations are
  /// printed as warnings, so a plan can be inspected before it is fixed (order, schedule,
  /// analyze).
  inspectable,
};

/// A plan as read, and its inspection.
struct CheckedPlan {
  PipelinePlan plan;
  Inspection inspection;
};

/// Thrown once the error was printed: the command exits with `exit` (run_cli catches it).
struct CommandFailed {
  Exit exit;
};

/// Loads, parses and checks the plan at `path`, printing warnings and errors to stderr as
/// `warning: ...` / `error: ...`. Returns nothing when the command must exit with
/// `invalid_plan`; throws CommandFailed{bad_usage} when the file cannot be read.
std::optional<CheckedPlan> load_checked(const std::string& path, Strictness strictness);

}  // namespace swp::cli
