#pragma once
// Option checks shared by the `swp` subcommands, with messages that name the value.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

/// Adds `--max-host-streams N` to `cmd`, into `limit`: the host backend's
/// RuntimeOptions::max_host_streams, an integer >= 1 (otherwise a usage error naming the
/// flag and the value). The commands that take it refuse it with any other backend, which
/// starts no thread per stream.
CLI::Option* add_max_host_streams(CLI::App& cmd, std::size_t& limit);

/// The line `swp` prints when the host backend refused one of a plan's streams (`what`, the
/// library's swp::StreamLimitError) under `--max-host-streams` `limit`: that message and the
/// flag that raises the limit. No other std::length_error gets it.
std::string host_stream_limit_error(std::string_view what, std::size_t limit);

}  // namespace swp::cli
