#pragma once
// The `swp` command line as a function: what main() runs, and what tests and the fuzzer call
// in-process.

namespace swp::cli {

/// Parses `argv` (argv[0] is the program name) and runs the subcommand it names, printing to
/// stdout and stderr as the `swp` executable does. Returns the exit code of the CLI contract
/// (DESIGN.md): 0 success, 1 invalid plan or failed run, 2 bad usage; every non-zero code comes
/// with one `error: ...` line on stderr naming the offending thing (a plan that breaks several
/// rules gets them all on it, joined with "; "). Help and version requests print to stdout and return 0.
/// Output that cannot be written (stdout on a full disk, /dev/full, a closed descriptor) makes
/// a command that succeeded return 1 with `error: writing standard output: REASON`.
/// Never calls exit(); reentrant (each call builds its own parser), so it can be called many
/// times in one process. Example: `const char* args[] = {"swp", "validate", "plan.json"};
/// int code = swp::cli::run_cli(3, args);`
int run_cli(int argc, const char* const* argv);

}  // namespace swp::cli
