// examples/readme_plan.cpp is the README's first example ("A plan in C++") verbatim, built with
// the examples; this test keeps the two equal and runs the program.

#include <doctest/doctest.h>


#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_command.hpp"

namespace test_readme_plan {  // each test file's names apart (unity builds)

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first ```cpp block after the heading `## A plan in C++`, without the fences.
std::string readme_block(const std::string& readme) {
  const auto heading = readme.find("\n## A plan in C++\n");
  REQUIRE(heading != std::string::npos);
  const std::string open = "```cpp\n";
  const auto start = readme.find(open, heading);
  REQUIRE(start != std::string::npos);
  const auto end = readme.find("\n```\n", start);
  REQUIRE(end != std::string::npos);
  return readme.substr(start + open.size(), end + 1 - start - open.size());
}

// The example without its leading comment lines and the blank line after them.
std::string example_code(const std::string& file) {
  std::size_t pos = 0;
  while (file.compare(pos, 2, "//") == 0) pos = file.find('\n', pos) + 1;
  REQUIRE(file.compare(pos, 1, "\n") == 0);
  return file.substr(pos + 1);
}

}  // namespace

TEST_CASE("the README's first example is examples/readme_plan.cpp, verbatim") {
  const std::filesystem::path root = SWP_SOURCE_DIR;
  const std::string block = readme_block(read_file(root / "README.md"));
  const std::string code = example_code(read_file(root / "examples" / "readme_plan.cpp"));
  CHECK(block == code);
}

TEST_CASE("the README's first example runs: the schedule, then each iteration's loss, falling") {
#ifndef SWP_README_EXAMPLE
  MESSAGE("examples are not built (-Dexamples=false): not run");
#else
  if (!std::filesystem::exists(SWP_README_EXAMPLE)) {
    MESSAGE("not built yet: ", SWP_README_EXAMPLE, " (ninja -C build builds it)");
    return;
  }
  const swp::test::CommandOutput run = swp::test::run_command("timeout 60 '" SWP_README_EXAMPLE "'");
  const std::string& out = run.out;
  CHECK(run.status == 0);
  CHECK(out.find("Forward") != std::string::npos);  // the schedule table
  std::vector<double> losses;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(": loss ");
    if (line.rfind("iteration ", 0) == 0 && at != std::string::npos) {
      CHECK(line.substr(10, at - 10) == std::to_string(losses.size()));  // in order
      losses.push_back(std::stod(line.substr(at + 7)));
    }
  }
  REQUIRE(losses.size() == 5);
  CHECK(losses.front() == doctest::Approx(4.0));  // y = 0.5 * (1 + 2 + 3), (y - 1)^2
  for (std::size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
#endif
}

}  // namespace test_readme_plan
