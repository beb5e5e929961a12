#pragma once
// Reading back what `swp profile` printed: its `metric exposed_us.TASK V us` lines.

#include <istream>
#include <string>

#include "swp/tune/profile_result.hpp"

namespace swp::cli {

/// The tasks' exposed times and the baseline from `swp profile`'s standard output; other
/// lines (the report) are ignored. Throws std::runtime_error naming `source` and the line for
/// a malformed exposed_us or baseline metric line, and when no exposed_us line is there.
ProfileResult read_profile_metrics(std::istream& in, const std::string& source);

}  // namespace swp::cli
