#include "profile_metrics.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <streambuf>
#include <string>
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

// The next line of `in` (without its '\n') into `line`; false at the end of the input. Held
// to the bounds of profile output, so that /dev/zero (one endless line) or an endless stream
// ends in an error instead of exhausting memory: `total` counts what was read so far.
bool next_profile_line(std::streambuf& in, std::string& line, std::size_t& total,
                       const std::string& source, int number) {
  line.clear();
  for (int c; (c = in.sbumpc()) != std::char_traits<char>::eof();) {
    if (++total > max_profile_bytes)
      throw std::runtime_error(source + ":" + std::to_string(number) + ": more than " +
                               std::to_string(max_profile_bytes >> 20) +
                               " MiB: larger than any `swp profile` output");
    if (c == '\n') return true;
    if (line.size() == max_profile_line_bytes)
      throw std::runtime_error(source + ":" + std::to_string(number) + ": a line longer than " +
                               std::to_string(max_profile_line_bytes >> 20) +
                               " MiB: not a line of `swp profile` output");
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

ProfileResult read_profile_metrics(std::istream& in, const std::string& source,
                                   std::size_t max_tasks) {
  ProfileResult result;
  std::string line;
  std::size_t total = 0;
  int number = 0;
  while (next_profile_line(*in.rdbuf(), line, total, source, number + 1)) {
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
      if (result.tasks.size() == max_tasks)
        throw std::runtime_error(where() + ": more exposed_us lines than the plan's " +
                                 std::to_string(max_tasks) +
                                 " tasks (a profile measures each task once)");
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
