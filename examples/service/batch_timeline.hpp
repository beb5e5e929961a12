#pragma once
// BatchTimes and BatchTimeline: when each micro-batch passed each step of the service, kept
// for `micro_batch_service --trace FILE`, to find where a latency tail came from.

#include <chrono>
#include <cstddef>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>

namespace service {

using TraceClock = std::chrono::steady_clock;

/// One batch's way through the server (steady clock, the clock service_load stamps its sends
/// with). `compute_cpu` is the CPU time the compute stream's thread spent on the batch, and
/// `compute_wait` the time it waited on a run queue for a CPU meanwhile (-1 ns where the
/// kernel does not say). Their sum is compute_end − compute_begin unless the virtual CPU
/// itself was taken away by the host; the CPU time per request grows when the CPU runs
/// slower (a busy host).
struct BatchTimes {
  TraceClock::time_point opened;         // its first request was added
  TraceClock::time_point sealed;         // full, or its window passed
  TraceClock::time_point submitted;      // handed to swp::async_submit
  TraceClock::time_point decoded;        // Decode began
  TraceClock::time_point compute_begin;  // the compute stream began its digests
  TraceClock::time_point compute_end;
  TraceClock::time_point encoded;  // the copy stream wrote its responses
  std::chrono::nanoseconds compute_cpu{0};
  std::chrono::nanoseconds compute_wait{0};
};

/// The retired batches' times, in retirement order. record() is thread-safe; a deque, so
/// that keeping them never copies what is there in the middle of a run.
class BatchTimeline {
 public:
  void record(std::size_t requests, const BatchTimes& times, TraceClock::time_point answered) {
    std::lock_guard lock(mutex_);
    rows_.push_back({requests, times, answered});
  }

  /// Writes a header line, then one line per batch: its request count, then every time in
  /// microseconds of the steady clock (opened sealed submitted decoded compute_begin
  /// compute_end encoded answered), then compute_cpu and compute_wait in microseconds. False when
  /// the file cannot be written.
  [[nodiscard]] bool write(const std::string& path) const {
    std::ofstream out(path);
    out << "requests opened_us sealed_us submitted_us decoded_us compute_begin_us "
           "compute_end_us encoded_us answered_us compute_cpu_us compute_wait_us\n";
    const auto us = [](TraceClock::time_point t) {
      return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    };
    std::lock_guard lock(mutex_);
    for (const Row& r : rows_) {
      const BatchTimes& t = r.times;
      out << r.requests << ' ' << us(t.opened) << ' ' << us(t.sealed) << ' ' << us(t.submitted)
          << ' ' << us(t.decoded) << ' ' << us(t.compute_begin) << ' ' << us(t.compute_end) << ' '
          << us(t.encoded) << ' ' << us(r.answered) << ' '
          << std::chrono::duration_cast<std::chrono::microseconds>(t.compute_cpu).count() << ' '
          << std::chrono::duration_cast<std::chrono::microseconds>(t.compute_wait).count() << '\n';
    }
    out.flush();
    return bool(out);
  }

 private:
  struct Row {
    std::size_t requests;
    BatchTimes times;
    TraceClock::time_point answered;
  };
  mutable std::mutex mutex_;
  std::deque<Row> rows_;
};

}  // namespace service
