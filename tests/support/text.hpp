#pragma once
// Text checks shared by the tests that read messages and outputs.

#include <string_view>

namespace swp::test {

/// Whether `part` occurs in `text` (an error message, a report, a program's output).
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace swp::test
