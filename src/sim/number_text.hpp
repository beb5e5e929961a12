#pragma once
// Numbers in the sim layer's error messages (private to src/sim).

#include <cstdio>
#include <string>

namespace swp::detail {

/// `x` with at most ten significant digits (%.10g): 1e300 reads "1e+300", not the 301 digits
/// and six decimals std::to_string prints; 0.25 stays "0.25", infinity "inf".
[[nodiscard]] inline std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", x);
  return text;
}

}  // namespace swp::detail
