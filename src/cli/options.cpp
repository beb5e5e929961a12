#include "options.hpp"

#include <charconv>
#include <string>

namespace swp::cli {

CLI::Validator at_least(std::int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        std::int64_t x = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, x);
        if (error == std::errc() && stop == end && x >= min) return {};
        return "expected an integer >= " + std::to_string(min) + ", got '" + value + "'";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator in_range(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        std::int64_t x = 0;
        const char* end = value.data() + value.size();
        const auto [stop, error] = std::from_chars(value.data(), end, x);
        const std::string range = std::to_string(min) + ".." + std::to_string(max);
        if (error == std::errc::invalid_argument || (error == std::errc() && stop != end))
          return "expected an integer in " + range + ", got '" + value + "', not a number";
        if (error == std::errc() && x >= min && x <= max) return {};
        return "expected an integer in " + range + ", got '" + value + "'";
      },
      "INT in " + std::to_string(min) + ".." + std::to_string(max));
}

}  // namespace swp::cli
