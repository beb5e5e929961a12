#pragma once
// The swp headers a header includes, directly or through others, read from the source tree:
// for tests that keep implementation headers (the engine core's) out of public ones.

#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace swp::test {

/// Every `swp/...` header that `header` (e.g. "swp/engine/retired.hpp") includes, itself
/// among them. Headers generated into the build tree (swp/config.hpp) are listed, not read:
/// they include nothing of swp.
inline std::set<std::string> include_closure(const std::string& header) {
  static const std::regex include_line(R"(^\s*#\s*include\s*["<](swp/[^">]+)[">])");
  std::set<std::string> seen;
  std::vector<std::string> pending{header};  // headers found, not yet read
  while (!pending.empty()) {
    const std::string next = pending.back();
    pending.pop_back();
    if (!seen.insert(next).second || next == "swp/config.hpp") continue;
    std::ifstream in(std::string(SWP_SOURCE_DIR) + "/include/" + next);
    if (!in) throw std::runtime_error("include_closure: cannot read include/" + next);
    std::string line;
    std::smatch match;
    while (std::getline(in, line))
      if (std::regex_search(line, match, include_line)) pending.push_back(match[1]);
  }
  return seen;
}

}  // namespace swp::test
