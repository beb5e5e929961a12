#include "metric.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace swp_bench {

void metric(std::string_view name, double value, std::string_view unit) {
  std::printf("metric %.*s %.6g %.*s\n", static_cast<int>(name.size()), name.data(), value,
              static_cast<int>(unit.size()), unit.data());
  std::fflush(stdout);
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2;
}

double minimum(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("minimum of no values");
  return *std::min_element(values.begin(), values.end());
}

}  // namespace swp_bench
