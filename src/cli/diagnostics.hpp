#pragma once
// How `swp` reports problems on stderr: one `error: ...` or `warning: ...` line each
// (DESIGN.md's CLI contract), whatever line breaks the message carries.

#include <string>
#include <string_view>

namespace swp::cli {

/// Prints `error: MESSAGE` as one line: line breaks inside MESSAGE (a hang report, a list of
/// violations) become "; ".
void print_error(std::string_view message);

/// Prints `warning: MESSAGE` as one line, like print_error.
void print_warning(std::string_view message);

/// `x` as messages print numbers: at most ten significant digits (%.10g), so 1e300 reads
/// "1e+300", not the 301 digits of std::to_string.
std::string number_text(double x);

/// Prints `error: cannot OPERATION 'PATH': REASON`, REASON from errno when it is set.
/// Call it right after the failed call, before anything can change errno.
void print_io_error(std::string_view operation, const std::string& path,
                    std::string_view fallback_reason);

}  // namespace swp::cli
