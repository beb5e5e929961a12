#pragma once
// Text checks shared by the tests that read messages and outputs.

#include <exception>
#include <string>
#include <string_view>

namespace swp::test {

/// Whether `part` occurs in `text` (an error message, a report, a program's output).
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

/// The message of an error of type E (empty for any other error).
template <class E>
std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return e.what();
  } catch (...) {
  }
  return "";
}

}  // namespace swp::test
