#pragma once
// The --trace and --svg files of `swp run`.

#include <fstream>
#include <string>

#include "swp/trace/trace.hpp"

namespace swp::cli {

/// The timeline files a run writes. They are opened before the run, so an unwritable path is
/// a usage error reported before any time is spent, and written after it.
class TraceOutputs {
 public:
  /// Opens `json_path` and `svg_path` for writing (an empty path: that file is not wanted).
  /// Returns false after printing `error: cannot write 'PATH': reason` to stderr (for the
  /// first file that cannot be opened), or an error when both paths name the same file
  /// (checked before either is opened, so nothing is truncated).
  bool open(const std::string& json_path, const std::string& svg_path);

  /// Whether any file was asked for (and a run must therefore be recorded).
  [[nodiscard]] bool wanted() const noexcept { return !json_path_.empty() || !svg_path_.empty(); }

  /// Writes `trace` into the opened files, the SVG under `title`. Returns false after printing
  /// an error naming the file that could not be written — a warning when `failed_run` (the
  /// run's own error was printed already).
  bool write(const Trace& trace, const std::string& title, bool failed_run = false);

 private:
  std::string json_path_, svg_path_;
  std::ofstream json_, svg_;
};

}  // namespace swp::cli
