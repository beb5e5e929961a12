#pragma once
// Running a program as a separate process through the shell, for the tests of the command
// line and of the examples: its exit status and what it wrote on standard output.

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace swp::test {

struct CommandOutput {
  int status = -1;  // exit status
  std::string out;  // standard output
};

inline CommandOutput run_command(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run ", command);
  CommandOutput result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    result.out.append(buffer, n);
  const int raw = ::pclose(pipe);
  REQUIRE_MESSAGE(WIFEXITED(raw), command, " did not exit normally");
  result.status = WEXITSTATUS(raw);
  return result;
}

}  // namespace swp::test
