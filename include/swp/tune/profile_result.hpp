#pragma once
// ProfileResult: what TaskProfiler measured (seed 003, class ProfileResult).

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace swp {

/// One task's measurement: how much of the serial iteration it exposes.
struct TaskExposure {
  std::string task;
  /// max(0, baseline − median serial iteration with this task shortcut), seconds.
  double exposed_s = 0;
  /// The median serial iteration with this task shortcut, seconds.
  double shortcut_s = 0;
};

/// The result of TaskProfiler::profile: the median serial iteration and, per profiled task in
/// the serial (topological) order, its exposed time.
///
/// Example:
/// ```
/// auto result = profiler.profile(batch);
/// result.print_report();
/// double emb = result.exposed_s("EmbLookup");
/// ```
struct ProfileResult {
  /// Median wall-clock (virtual on sim) of one serial iteration, seconds.
  double baseline_s = 0;
  std::vector<TaskExposure> tasks;

  /// The exposed time of `task`; throws std::out_of_range naming it when it was not profiled.
  [[nodiscard]] double exposed_s(std::string_view task) const;
  /// The sum of every task's exposed time, seconds.
  [[nodiscard]] double sum_s() const;

  /// The seed's report:
  /// ```
  /// Baseline serial iteration: 8.503 ms
  ///
  /// Task                     Exposed      % baseline
  /// ------------------------ ---------- ------------
  /// CopyBatch                   0.521ms         6.1%
  /// ------------------------ ---------- ------------
  /// SUM                         7.571ms        89.0%
  /// ```
  [[nodiscard]] std::string format_report() const;
  /// Writes format_report() to `out` (default std::cout).
  void print_report(std::ostream& out) const;
  void print_report() const;
};

}  // namespace swp
