#include "swp/io/progress_meter.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace swp::io {

ProgressMeter::ProgressMeter(std::string label, std::uint64_t total_records,
                             std::uint64_t total_bytes, std::FILE* out)
    : ProgressMeter(std::move(label), total_records, total_bytes, out,
                    out != nullptr && ::isatty(::fileno(out)) == 1) {}

ProgressMeter::ProgressMeter(std::string label, std::uint64_t total_records,
                             std::uint64_t total_bytes, std::FILE* out, bool enabled)
    : label_(std::move(label)),
      total_records_(total_records),
      total_bytes_(total_bytes),
      out_(out),
      enabled_(enabled && out != nullptr) {}

std::string ProgressMeter::line(std::uint64_t records, std::uint64_t bytes,
                                std::chrono::duration<double> elapsed) const {
  const double s = std::max(elapsed.count(), 1e-9);
  const double fraction =
      total_bytes_ != 0     ? static_cast<double>(bytes) / static_cast<double>(total_bytes_)
      : total_records_ != 0 ? static_cast<double>(records) / static_cast<double>(total_records_)
                            : 1.0;
  const double eta = fraction > 0 ? s * (1.0 - fraction) / fraction : 0.0;
  char text[200];
  std::snprintf(text, sizeof text, "%s: %llu/%llu records  %.0f records/s  %.1f MB/s  ETA %.0fs",
                label_.c_str(), static_cast<unsigned long long>(records),
                static_cast<unsigned long long>(total_records_), static_cast<double>(records) / s,
                static_cast<double>(bytes) / s / 1e6, eta < 0 ? 0.0 : eta);
  return text;
}

void ProgressMeter::update(std::uint64_t records, std::uint64_t bytes) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  drawn_ = true;
  std::fprintf(out_, "\r%s\033[K", line(records, bytes, now - start_).c_str());
  std::fflush(out_);
}

void ProgressMeter::finish() {
  if (enabled_ && drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace swp::io
