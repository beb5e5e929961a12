#pragma once
// Running the `swp` command line as a separate process, for the CLI tests.

#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>

#include "support/plans.hpp"
#include "support/run_command.hpp"
#include "swp/async/detail/sanitizers.hpp"

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

/// A shell prefix that caps the data segment (heap and private mappings: RLIMIT_DATA) of the
/// command after it at `mib` MiB, which holds a command to a memory bound without counting the
/// shared libraries it maps. Empty under AddressSanitizer or ThreadSanitizer, whose shadow
/// memory the cap would refuse: there the tests check what the command does, not its memory.
/// Example: `run_swp("validate /dev/zero", memory_cap_mib(400))`.
inline std::string memory_cap_mib(int mib) {
#if SWP_ASAN || SWP_TSAN
  (void)mib;
  return "";
#else
  return "ulimit -d " + std::to_string(mib * 1024) + ";";
#endif
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
