#pragma once
// The examples' command lines: CLI11 (a dependency of swp's own `swp` command), with value
// checks whose messages name the flag and the accepted range, and the `swp` command's error
// form (docs/cli.md): one `error: ...` line on stderr and an exit code the program chooses.
//
// Example:
// ```
// CLI::App app{"what the program does", "overarch_sdd"};
// std::int64_t steps = 20;
// app.add_option("--steps", steps, "training steps per schedule")
//     ->check(examples::integer_in(1, 1'000'000));
// if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
// ```

#include <CLI/CLI.hpp>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace examples {

/// Accepts a whole decimal integer in `min`..`max`; otherwise the parse fails with
/// `--flag: expected an integer in MIN..MAX, got 'VALUE'`.
inline CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& value) -> std::string {
        std::int64_t x = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, x);
        if (error == std::errc() && stop == end && x >= min && x <= max) return {};
        return "expected an integer in " + range + ", got '" + value + "'";
      },
      "[" + range + "]");
}

/// Accepts a decimal number in `min`..`max`; otherwise `--flag: expected a number in
/// MIN..MAX, got 'VALUE'`.
inline CLI::Validator number_in(double min, double max) {
  std::ostringstream range;
  range << min << ".." << max;
  return CLI::Validator(
      [min, max, range = range.str()](std::string& value) -> std::string {
        double x = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, x);
        if (error == std::errc() && stop == end && x >= min && x <= max) return {};
        return "expected a number in " + range + ", got '" + value + "'";
      },
      "[" + range.str() + "]");
}

/// Accepts any value but an empty one: `--flag: expected a value, got ''`.
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "expected a value, got ''" : std::string();
      },
      "");
}

/// A bad command line found after the parse (flags that conflict): prints
/// `error: <what> (see PROGRAM --help)` on stderr and returns `exit_code`, for main() to return.
inline int usage_error(const CLI::App& app, const std::string& what, int exit_code = 2) {
  std::cerr << "error: " << what << " (see " << app.get_name() << " --help)\n";
  return exit_code;
}

/// Parses the command line into `app`, whose options show their defaults in --help. Returns
/// nothing when the program goes on, else the exit code main() returns now: 0 after printing
/// the help (`--help`, `-h`) on stdout, `bad_usage` after printing one line on stderr,
/// `error: <what, naming the flag> (see PROGRAM --help)`. With `after_dashes`, the arguments
/// after the first `--` are not parsed but returned there (a program passing them on); without
/// it they are an error.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, int bad_usage = 2,
                                std::vector<std::string>* after_dashes = nullptr) {
  int parsed = argc;  // argv[0..parsed) goes to CLI11
  if (after_dashes != nullptr) {
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) != "--") continue;
      after_dashes->assign(argv + i + 1, argv + argc);
      parsed = i;
      break;
    }
  }
  for (CLI::Option* option : app.get_options()) option->capture_default_str();
  try {
    app.parse(parsed, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);  // the help text, on stdout; 0
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // Unknown arguments are named first, in command-line order (CLI11 2.1 lists them
    // backwards), even when CLI11 stopped at a flag it found missing: a mistyped flag
    // (`--spwan x`) is what explains the missing one (`--spawn`).
    if (const std::vector<std::string> extras = app.remaining(); !extras.empty()) {
      what = extras.size() > 1 ? "the following arguments were not expected:"
                               : "the following argument was not expected:";
      for (const std::string& extra : extras) what += ' ' + extra;
    }
    // CLI11 writes sentences ("The following argument was not expected: x"); one line of
    // ours continues one.
    if (what.size() > 1 && std::islower(static_cast<unsigned char>(what[1])) != 0)
      what.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(what.front())));
    return usage_error(app, what, bad_usage);
  }
  return std::nullopt;
}

}  // namespace examples
