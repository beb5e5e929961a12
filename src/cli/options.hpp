#pragma once
// Option checks shared by the `swp` subcommands, with messages that name the value.

#include <CLI/CLI.hpp>
#include <cstdint>

namespace swp::cli {

/// Accepts a decimal integer >= `min`; otherwise CLI11 reports
/// `--flag: expected an integer >= MIN, got 'VALUE'` (CLI::NonNegativeNumber printed the
/// largest double, 300 digits, as the bound).
CLI::Validator at_least(std::int64_t min);

}  // namespace swp::cli
