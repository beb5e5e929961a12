#pragma once
// The `metric <name> <value> <unit>` lines every swp-bench subcommand prints, and the
// statistics of repeated measurements.

#include <string_view>
#include <vector>

namespace swp_bench {

/// Prints `metric <name> <value> <unit>` on standard output and flushes it.
void metric(std::string_view name, double value, std::string_view unit);

/// Median of `values` (the mean of the two middle ones for an even count).
/// Throws std::invalid_argument when empty.
double median(std::vector<double> values);

/// Smallest of `values`. Throws std::invalid_argument when empty.
double minimum(const std::vector<double>& values);

}  // namespace swp_bench
