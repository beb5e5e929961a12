#pragma once
// Reading back what `swp profile` printed: its `metric exposed_us.TASK V us` lines.

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>

#include "swp/core/plan_json.hpp"
#include "swp/tune/profile_result.hpp"

namespace swp::cli {

/// The most `read_profile_metrics` reads: as much as a plan (swp::max_plan_bytes, 256 MiB),
/// whose tasks' lines a profile holds.
inline constexpr std::size_t max_profile_bytes = max_plan_bytes;

/// The longest line `read_profile_metrics` reads (1 MiB): a task name is one of a plan's, and
/// a longer line is no profile output (`--costs /dev/zero` is one endless line).
inline constexpr std::size_t max_profile_line_bytes = std::size_t{1} << 20;

/// The tasks' exposed times and the baseline from `swp profile`'s standard output; other
/// lines (the report) are ignored. Throws std::runtime_error naming `source` and the line for
/// a malformed exposed_us or baseline metric line, a line longer than max_profile_line_bytes,
/// input past max_profile_bytes, more exposed_us lines than `max_tasks` (the plan's tasks: a
/// profile measures each once), and when no exposed_us line is there. Memory stays within the
/// bounds: the longest line and at most `max_tasks` tasks.
ProfileResult read_profile_metrics(std::istream& in, const std::string& source,
                                   std::size_t max_tasks = SIZE_MAX);

}  // namespace swp::cli
