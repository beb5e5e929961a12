#pragma once
// ProgressMeter: a one-line progress display for long loads (records/s, MB/s, ETA), shown
// only on a terminal.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace swp::io {

/// Redraws one status line (`\r`) at most every 200 ms: done/total records, records/s, MB/s and
/// the time left. Silent unless `out` is a terminal (isatty), so CI logs and pipes stay clean;
/// `finish()` ends the line it drew (nothing when silent).
/// Example:
/// ```
/// swp::io::ProgressMeter meter("check", total_records, total_bytes);
/// meter.update(records_done, bytes_done);
/// meter.finish();
/// ```
class ProgressMeter {
 public:
  ProgressMeter(std::string label, std::uint64_t total_records, std::uint64_t total_bytes,
                std::FILE* out = stdout);
  /// Enabled on a terminal only, or as forced (tests).
  ProgressMeter(std::string label, std::uint64_t total_records, std::uint64_t total_bytes,
                std::FILE* out, bool enabled);

  void update(std::uint64_t records, std::uint64_t bytes);
  void finish();
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  /// The line update() draws for these figures after `elapsed`.
  [[nodiscard]] std::string line(std::uint64_t records, std::uint64_t bytes,
                                 std::chrono::duration<double> elapsed) const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  std::uint64_t total_records_;
  std::uint64_t total_bytes_;
  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_{};
};

}  // namespace swp::io
