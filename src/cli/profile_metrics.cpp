#include "profile_metrics.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

namespace swp::cli {

namespace {

constexpr std::string_view kExposed = "metric exposed_us.";
constexpr std::string_view kBaseline = "metric baseline_us_per_iter ";

// "NAME VALUE us" split from the right, so that a task name may hold spaces.
struct Tail {
  std::string_view name;
  double value = 0;
};

bool parse_tail(std::string_view rest, Tail& out) {
  if (!rest.ends_with(" us")) return false;
  rest.remove_suffix(3);
  const auto space = rest.rfind(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view number = rest.substr(space + 1);
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), out.value);
  if (ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(out.value) ||
      out.value < 0)
    return false;
  out.name = rest.substr(0, space);
  return true;
}

}  // namespace

ProfileResult read_profile_metrics(std::istream& in, const std::string& source) {
  ProfileResult result;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string_view text = line;
    if (text.ends_with('\r')) text.remove_suffix(1);
    const auto where = [&] { return source + ":" + std::to_string(number); };
    if (text.starts_with(kExposed)) {
      Tail tail;
      if (!parse_tail(text.substr(kExposed.size()), tail) || tail.name.empty())
        throw std::runtime_error(where() +
                                 ": expected 'metric exposed_us.TASK MICROSECONDS us', "
                                 "got '" +
                                 std::string(text) + "'");
      result.tasks.push_back({std::string(tail.name), tail.value * 1e-6, 0});
    } else if (text.starts_with(kBaseline)) {
      Tail tail;
      if (!parse_tail(text.substr(kBaseline.size() - 1), tail) || !tail.name.empty())
        throw std::runtime_error(where() +
                                 ": expected 'metric baseline_us_per_iter MICROSECONDS "
                                 "us', got '" +
                                 std::string(text) + "'");
      result.baseline_s = tail.value * 1e-6;
    }
  }
  if (result.tasks.empty())
    throw std::runtime_error(source +
                             ": no 'metric exposed_us.TASK' lines (the output of "
                             "`swp profile PLAN`)");
  return result;
}

}  // namespace swp::cli
