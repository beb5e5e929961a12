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

}  // namespace swp::cli
