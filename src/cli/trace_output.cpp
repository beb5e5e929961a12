#include "trace_output.hpp"

#include <cerrno>
#include <exception>
#include <filesystem>
#include <system_error>

#include "diagnostics.hpp"
#include "swp/trace/chrome_trace.hpp"
#include "swp/trace/svg_timeline.hpp"

namespace swp::cli {

namespace {

bool open_one(std::ofstream& file, const std::string& path) {
  if (path.empty()) return true;
  errno = 0;
  file.open(path, std::ios::out | std::ios::trunc);
  if (file) return true;
  print_io_error("write", path, "open failed");
  return false;
}

template <class Write>
bool write_one(std::ofstream& file, const std::string& path, bool failed_run, Write write) {
  if (path.empty()) return true;
  // After a failed run its error was the one error line: a file that cannot be written is
  // then only a warning.
  const auto report = failed_run ? print_warning : print_error;
  try {
    write(file);
    file.close();
    if (file) return true;
    report("cannot write '" + path + "': writing failed");
  } catch (const std::exception& e) {
    report("cannot write '" + path + "': " + e.what());
  }
  return false;
}

// Whether two paths name one file (spelled differently, or through links), whether it exists
// yet or not.
bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec_a, ec_b;
  const auto canonical_a = std::filesystem::weakly_canonical(a, ec_a);
  const auto canonical_b = std::filesystem::weakly_canonical(b, ec_b);
  return !ec_a && !ec_b && canonical_a == canonical_b;
}

}  // namespace

bool TraceOutputs::open(const std::string& json_path, const std::string& svg_path) {
  json_path_ = json_path;
  svg_path_ = svg_path;
  // Checked before either is opened (truncated): the SVG would overwrite the trace.
  if (!json_path_.empty() && !svg_path_.empty() && same_file(json_path_, svg_path_)) {
    print_error("--trace and --svg name the same file '" + svg_path_ +
                "': the SVG would overwrite the trace; give them different paths");
    return false;
  }
  return open_one(json_, json_path_) && open_one(svg_, svg_path_);
}

bool TraceOutputs::write(const Trace& trace, const std::string& title, bool failed_run) {
  // One error at most: the SVG is not attempted once the JSON could not be written.
  return write_one(json_, json_path_, failed_run,
                   [&](std::ostream& out) { write_chrome_trace(trace, out); }) &&
         write_one(svg_, svg_path_, failed_run, [&](std::ostream& out) {
           write_svg(trace, out, SvgOptions{.title = title});
         });
}

}  // namespace swp::cli
