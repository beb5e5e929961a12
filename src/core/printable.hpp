#pragma once
// Names from plans reach terminals and line-based outputs (`swp order` prints one per line):
// what tells whether a name holds a control character, and a form of it safe to print.

#include <string>
#include <string_view>

namespace swp::detail {

/// A control character: C0 (NUL, newline, ESC, ...) or DEL.
[[nodiscard]] constexpr bool is_control(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

[[nodiscard]] constexpr bool has_control_character(std::string_view text) noexcept {
  for (char c : text)
    if (is_control(c)) return true;
  return false;
}

/// `text` with every control character written as an escape (\n, \t, \r, else \xHH).
[[nodiscard]] inline std::string printable(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (!is_control(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

}  // namespace swp::detail
