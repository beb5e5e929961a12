#include "diagnostics.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace swp::cli {

namespace {

void print_line(std::string_view prefix, std::string_view message) {
  std::string line(prefix);
  bool pending_break = false;
  for (const char c : message) {
    if (c == '\n' || c == '\r') {
      pending_break = true;
      continue;
    }
    if (pending_break) {
      // Indentation after a break only formatted the multi-line form.
      if (c == ' ' || c == '\t') continue;
      line += line.ends_with(':') ? " " : "; ";
      pending_break = false;
    }
    line += c;
  }
  std::cerr << line << '\n';
}

}  // namespace

void print_error(std::string_view message) { print_line("error: ", message); }

void print_warning(std::string_view message) { print_line("warning: ", message); }

std::string number_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", x);
  return text;
}

void print_io_error(std::string_view operation, const std::string& path,
                    std::string_view fallback_reason) {
  const int error = errno;
  std::string message = "cannot " + std::string(operation) + " '" + path + "': ";
  message += error != 0 ? std::string(std::strerror(error)) : std::string(fallback_reason);
  print_error(message);
}

}  // namespace swp::cli
