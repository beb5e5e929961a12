#include "options.hpp"

#include <charconv>
#include <string>

#include "swp/config.hpp"

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

CLI::Validator backend_name() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value == "host" || value == "sim") return {};
        const std::string here = "; backends in this build: host, sim";
        if (value == "cuda" && SWP_HAVE_CUDA == 0)
          return "the cuda backend is not compiled into this build" + here;
        return "unknown backend '" + value + "'" + here;
      },
      "host|sim");
}

}  // namespace swp::cli
