#pragma once
// Running the `swp` command line as a separate process, for the CLI tests.

#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>

#include "support/plans.hpp"
#include "support/run_command.hpp"

namespace swp::test {

inline std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Result {
  int status = -1;  // exit status of swp
  std::string out, err;
};

// Runs `<before> swp <args>` through the shell; stdout is read from the pipe, stderr from a
// temporary file. `before` can be a pipeline feeding swp's standard input ("cat f |").
inline Result run_swp(const std::string& args, const std::string& before = "") {
  const TempFile err_file("", ".err");
  const std::string command =
      before + " " + quoted(SWP_CLI_PATH) + " " + args + " 2>" + quoted(err_file.str());
  const CommandOutput run = run_command(command);
  Result result;
  result.status = run.status;
  result.out = run.out;
  result.err = swp::test::read_text(err_file.path());
  return result;
}


/// The `metric NAME VALUE UNIT` lines of `text`, by name (`nan` reads as NaN).
inline std::map<std::string, double> metric_values(const std::string& text) {
  std::map<std::string, double> values;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string tag, name, value;
    if (words >> tag >> name >> value && tag == "metric") values[name] = std::stod(value);
  }
  return values;
}

}  // namespace swp::test
