#include "swp/tune/profile_result.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace swp {

double ProfileResult::exposed_s(std::string_view task) const {
  for (const auto& t : tasks)
    if (t.task == task) return t.exposed_s;
  throw std::out_of_range("ProfileResult: task '" + std::string(task) + "' was not profiled");
}

double ProfileResult::sum_s() const {
  double sum = 0;
  for (const auto& t : tasks) sum += t.exposed_s;
  return sum;
}

namespace {

std::string fixed(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string pad_left(const std::string& text, std::size_t width) {
  return std::string(width > text.size() ? width - text.size() : 0, ' ') + text;
}

std::string pad_right(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

}  // namespace

std::string ProfileResult::format_report() const {
  std::size_t w_task = 24;
  for (const auto& t : tasks) w_task = std::max(w_task, t.task.size());
  const std::size_t w_exposed = 10, w_percent = 12;
  auto row = [&](const std::string& name, double seconds) {
    const double percent = baseline_s > 0 ? 100.0 * seconds / baseline_s : 0.0;
    return pad_right(name, w_task) + " " + pad_left(fixed("%.3fms", seconds * 1e3), w_exposed) +
           " " + pad_left(fixed("%.1f%%", percent), w_percent) + "\n";
  };
  const std::string rule =
      std::string(w_task, '-') + " " + std::string(w_exposed, '-') + " " + std::string(w_percent, '-') + "\n";
  std::string out = "Baseline serial iteration: " + fixed("%.3f", baseline_s * 1e3) + " ms\n\n";
  out += pad_right("Task", w_task) + " " + pad_left("Exposed", w_exposed) + " " +
         pad_left("% baseline", w_percent) + "\n";
  out += rule;
  for (const auto& t : tasks) out += row(t.task, t.exposed_s);
  out += rule;
  out += row("SUM", sum_s());
  return out;
}

void ProfileResult::print_report(std::ostream& out) const { out << format_report(); }

void ProfileResult::print_report() const { print_report(std::cout); }

}  // namespace swp
