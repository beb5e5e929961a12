#include "options.hpp"

#include <charconv>
#include <optional>
#include <string>

#include "swp/config.hpp"
#include "swp/engine/runtime.hpp"

namespace swp::cli {

namespace {

// `value` as a whole decimal integer; nullopt, with `number` telling whether it was a number
// at all (false) or one out of int64's range (true).
std::optional<std::int64_t> whole_integer(const std::string& value, bool& number) {
  std::int64_t x = 0;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, x);
  number = error != std::errc::invalid_argument && stop == end;
  if (error != std::errc() || stop != end) return std::nullopt;
  return x;
}

}  // namespace

CLI::Validator at_least(std::int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        bool number = false;
        if (const auto x = whole_integer(value, number); x && *x >= min) return {};
        return "expected an integer >= " + std::to_string(min) + ", got '" + value + "'";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator in_range(std::int64_t min, std::int64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& value) -> std::string {
        bool number = false;
        if (const auto x = whole_integer(value, number); x && *x >= min && *x <= max) return {};
        return "expected an integer in " + range + ", got '" + value + "'" +
               (number ? "" : ", not a number");
      },
      "INT in " + range);
}

CLI::Validator device_backend() {
  std::string names;
  for (std::string_view b : compiled_backends()) names += (names.empty() ? "" : "|") + std::string(b);
  return CLI::Validator(
      [](std::string& value) -> std::string {
        Backend backend{};
        if (parse_backend(value, backend)) return {};
        std::string here = "; backends in this build: ";
        for (std::string_view b : compiled_backends())
          here += (here.back() == ' ' ? "" : ", ") + std::string(b);
        if (value == "cuda") return "the cuda backend is not compiled into this build" + here;
        return "unknown backend '" + value + "'" + here;
      },
      names);
}

CLI::Option* add_max_host_streams(CLI::App& cmd, std::size_t& limit) {
  return cmd
      .add_option("--max-host-streams", limit,
                  "--backend host: the most streams its device has at once (each may run a "
                  "thread), one of them kept for the default stream")
      ->check(at_least(1))
      ->capture_default_str();
}

std::string host_stream_limit_error(std::string_view what, std::size_t limit) {
  return std::string(what) + "; swp: --max-host-streams N raises the limit (now " +
         std::to_string(limit) + "), --backend sim starts no thread per stream";
}

}  // namespace swp::cli
