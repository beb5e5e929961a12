#pragma once
// Option checks shared by the `swp` subcommands, with messages that name the value.

#include <CLI/CLI.hpp>
#include <cstdint>

namespace swp::cli {

/// Accepts a decimal integer >= `min`; otherwise CLI11 reports
/// `--flag: expected an integer >= MIN, got 'VALUE'` (CLI::NonNegativeNumber printed the
/// largest double, 300 digits, as the bound).
CLI::Validator at_least(std::int64_t min);

/// Accepts a decimal integer in `min`..`max`; otherwise `--flag: expected an integer in
/// MIN..MAX, got 'VALUE'`, adding "not a number" when it is none (CLI::Range said "not in
/// range" of `--workers Forward`).
CLI::Validator in_range(std::int64_t min, std::int64_t max);

/// Accepts the name of a device backend compiled into this build (`host`, `sim`); says when a
/// known backend (`cuda`) is not compiled in, rather than that it is unknown.
CLI::Validator device_backend();

}  // namespace swp::cli
