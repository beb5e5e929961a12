#pragma once
// Numbered names for generated plans ("T3", "P12"), built by appending: "T" + std::to_string(n)
// draws a false -Wrestrict from g++ 12 at -O3 (GCC PR 105329), and a release build of the
// tests should compile without warnings.

#include <string>
#include <string_view>

namespace swp::test {

inline std::string numbered(std::string_view prefix, long long n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

}  // namespace swp::test
