#include "trace_output.hpp"

#include <cerrno>
#include <cstring>
#include <exception>
#include <iostream>

#include "swp/trace/chrome_trace.hpp"
#include "swp/trace/svg_timeline.hpp"

namespace swp::cli {

namespace {

bool open_one(std::ofstream& file, const std::string& path) {
  if (path.empty()) return true;
  errno = 0;
  file.open(path, std::ios::out | std::ios::trunc);
  if (file) return true;
  std::cerr << "error: cannot write '" << path
            << "': " << (errno != 0 ? std::strerror(errno) : "open failed") << '\n';
  return false;
}

template <class Write>
bool write_one(std::ofstream& file, const std::string& path, Write write) {
  if (path.empty()) return true;
  try {
    write(file);
    file.close();
    if (file) return true;
    std::cerr << "error: cannot write '" << path << "': writing failed\n";
  } catch (const std::exception& e) {
    std::cerr << "error: cannot write '" << path << "': " << e.what() << '\n';
  }
  return false;
}

}  // namespace

bool TraceOutputs::open(const std::string& json_path, const std::string& svg_path) {
  json_path_ = json_path;
  svg_path_ = svg_path;
  return open_one(json_, json_path_) && open_one(svg_, svg_path_);
}

bool TraceOutputs::write(const Trace& trace, const std::string& title) {
  const bool json_ok =
      write_one(json_, json_path_, [&](std::ostream& out) { write_chrome_trace(trace, out); });
  const bool svg_ok = write_one(svg_, svg_path_, [&](std::ostream& out) {
    write_svg(trace, out, SvgOptions{.title = title});
  });
  return json_ok && svg_ok;
}

}  // namespace swp::cli
