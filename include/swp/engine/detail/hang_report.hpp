#pragma once
// HangReport: a pipeline's hang in words, for its deadline errors (not for direct use).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "swp/core/plan_graph.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

class EngineCore;

/// What a pipeline that stopped moving waits for: the text of its PipelineTimeout errors and of
/// the fatal error of a teardown under running bodies. Read from the core (a friend) on the
/// thread that found the deadline passed; any thread may still change what it reads, so a
/// report is a snapshot, each instance's line consistent in itself.
///
/// The report file: where EngineTimeouts::hang_report names one, else $SWP_HANG_REPORT, each
/// report is also appended to that file (for a service whose errors end up in a log that cuts
/// long messages). Its behaviour is tested through the pipelines that time out
/// (tests/engine/test_engine_timeouts.cpp).
class HangReport {
 public:
  explicit HangReport(const EngineCore& core) noexcept : core_(core) {}

  /// A producer of (t, iter), intra first, then inter (of iter - 1), that has not finished,
  /// with its iteration; none when all have. Any thread: it reads only the producers' states
  /// (ClockRelease names the one an instance parks on with it).
  [[nodiscard]] std::optional<std::pair<TaskIndex, std::int64_t>> unfinished_producer(
      TaskIndex t, std::int64_t iter) const noexcept;
  /// One line per unfinished instance of the in-flight iterations: its task, iteration, lane
  /// and stream, and what it waits for (a producer, its lane's holder, a sequencer turn, its
  /// body's await, a thread).
  [[nodiscard]] std::string unfinished() const;
  /// The line of task `t` of serial iteration `iter` (run_serial_iteration), whose body has
  /// not finished: its lane, the "default" stream, what it waits for.
  [[nodiscard]] std::string serial_unfinished(TaskIndex t, std::int64_t iter) const;
  /// One line per task of iteration `iter` whose device work has not completed.
  [[nodiscard]] std::string device_work(std::int64_t iter) const;
  /// A PipelineTimeout whose message is `report`, written to the report file too (a note says
  /// so in the message when that failed).
  [[nodiscard]] PipelineTimeout error(const std::string& report) const;
  /// A pipeline is destroyed while released instances still run past the drain deadline:
  /// reports them on stderr (and in the report file) and aborts, since freeing the pipeline
  /// would let them write into freed memory. `cannot_wait`: why the teardown could not wait
  /// for them at all (the scheduler's error, e.g. a stopped io_context), said in the report;
  /// empty: the deadline passed.
  [[noreturn]] void die_undrained(const std::string& cannot_wait = {}) const noexcept;

 private:
  const EngineCore& core_;
};

}  // namespace swp::detail
