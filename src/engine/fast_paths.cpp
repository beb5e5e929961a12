#include "swp/engine/fast_paths.hpp"

#include <array>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace swp {

namespace {

// Each shortcut by its name (FastPaths' member names, which parse() reads).
constexpr std::array<std::pair<std::string_view, bool FastPaths::*>, 3> names{{
    {"lane_claims", &FastPaths::lane_claims},
    {"in_place", &FastPaths::in_place},
    {"uncounted", &FastPaths::uncounted},
}};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

FastPaths FastPaths::parse(std::string_view spec) {
  spec = trimmed(spec);
  if (spec == "all") return all();
  if (spec == "none") return none();
  FastPaths paths = none();
  // Every comma separates two words: "a," ends with an empty one, which is no shortcut.
  for (bool more = !spec.empty(); more;) {
    const std::size_t comma = spec.find(',');
    const std::string_view word = trimmed(spec.substr(0, comma));
    more = comma != std::string_view::npos;
    if (more) spec.remove_prefix(comma + 1);
    bool known = false;
    for (const auto& [name, member] : names) {
      if (word != name) continue;
      paths.*member = true;
      known = true;
    }
    if (!known) {
      std::string valid = "all, none";
      for (const auto& entry : names) valid.append(", ").append(entry.first);
      throw std::invalid_argument("fast paths: unknown shortcut '" + std::string(word) +
                                  "' (valid: " + valid + ")");
    }
  }
  return paths;
}

FastPaths FastPaths::from_environment() {
  const char* value = std::getenv("SWP_FAST_PATHS");
  if (value == nullptr || trimmed(value).empty()) return all();
  try {
    return parse(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("SWP_FAST_PATHS=") + value + ": " + e.what());
  }
}

std::string to_string(const FastPaths& paths) {
  if (paths == FastPaths::all()) return "all";
  if (paths == FastPaths::none()) return "none";
  std::string out;
  for (const auto& [name, member] : names) {
    if (!(paths.*member)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

}  // namespace swp
