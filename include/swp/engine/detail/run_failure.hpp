#pragma once
// RunFailure: what failed a pipeline's run, recorded once (not for direct use).

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "swp/async/detail/spin_lock.hpp"

namespace swp::detail {

/// What failed a run: a task (error: its cause, wrapped in a TaskError when thrown), a
/// deadline or a callback (error: the PipelineTimeout or CallbackError to throw as it is), or
/// cancel() (error: its Cancelled).
enum class FailureKind : std::uint8_t { task, timeout, callback, cancelled };

struct Failure {
  std::string task;  // the failing task's name (kind task; empty otherwise)
  std::int64_t iter = -1;
  std::exception_ptr error;
  FailureKind kind = FailureKind::task;

  /// The error the run ends with: a TaskError naming the task and iteration for a task's
  /// failure, the error itself otherwise.
  [[nodiscard]] std::exception_ptr run_error() const;
  /// For a message: the task and iteration (kind task), and the error's what().
  [[nodiscard]] std::string describe() const;
};

/// The failure record of one pipeline: the first root cause wins. Any thread records (a lane's
/// task, a timer's deadline, cancel()'s caller); the caller's thread reads it once the run
/// drained. Tests: tests/engine/detail/test_run_failure.cpp, and the pipelines' failures
/// (tests/engine/test_failure_policy.cpp, test_pipeline_cancel.cpp, test_engine_timeouts.cpp).
class RunFailure {
 public:
  /// Records `failure` unless the run failed already. Returns the reason the run's stop
  /// signal carries when it was the first (then the caller stops the run and calls
  /// tell_run_failed), nothing when an earlier failure stands.
  /// Errors: std::bad_alloc (the record's strings); nothing is recorded then.
  std::optional<std::string> record(const Failure& failure);
  /// Marks the run failed without a record (recording it ran out of memory): snapshot()
  /// then gives a generic error.
  void mark_failed() noexcept { failed_.store(true, std::memory_order_release); }
  /// Some failure was recorded in this run; lock-free, on the engine's admission paths.
  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  /// A copy of the record; only once failed().
  [[nodiscard]] Failure snapshot() const;
  /// Forgets the record as a run starts.
  void reset() noexcept;

  /// Called once per failing run with its run_error() (see Pipeline::on_run_failed).
  void set_on_run_failed(std::function<void(const std::exception_ptr&)> callback) {
    on_run_failed_ = std::move(callback);
  }
  /// Calls the on_run_failed callback, if any, with `failure`'s run_error(); what it throws is
  /// dropped (it is called where the run fails: a lane, a timer, cancel()'s caller; the run's
  /// own error surfaces from progress() anyway).
  void tell_run_failed(const Failure& failure) const noexcept;

 private:
  mutable SpinLock lock_;
  std::optional<Failure> failure_;
  std::atomic<bool> failed_{false};  // failure_ is set (or mark_failed); readable without the lock
  std::function<void(const std::exception_ptr&)> on_run_failed_;
};

}  // namespace swp::detail
