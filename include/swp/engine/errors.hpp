#pragma once
// The errors a pipeline reports.

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

namespace swp {

/// A task's body threw. Thrown from `progress()` (and run/drain) after everything in flight
/// drained; `nested()` is the task's own exception. The pipeline can be filled again.
class TaskError : public std::runtime_error {
 public:
  TaskError(std::string task, std::int64_t iter, std::exception_ptr cause);
  [[nodiscard]] const std::string& task() const noexcept { return task_; }
  [[nodiscard]] std::int64_t iter() const noexcept { return iter_; }
  [[nodiscard]] const std::exception_ptr& nested() const noexcept { return cause_; }

 private:
  std::string task_;
  std::int64_t iter_;
  std::exception_ptr cause_;
};

/// A callback of the run threw: the batch source (asked for an iteration's batch) or
/// `on_retire` (told of a retiring iteration). Like a task's error it ends the run: every
/// cancellable wait in flight is woken with Cancelled, everything in flight drains, and this
/// is thrown once, after the drain. A source's error surfaces from the progress() (next(),
/// async_progress(), drain(), run()) that asked for the batch when nothing was retired yet in
/// it, else from the next one: the progress() that admitted the failing batch still returns
/// the iteration it retired, so every iteration it returned was retired exactly once
/// (fill_pipeline calls no source). An `on_retire` error
/// surfaces from the progress() retiring that iteration, which returns nothing. `nested()`
/// is the callback's own exception. An `on_failure` error surfaces from the progress()
/// reporting that iteration (under FailurePolicy::skip), or in place of the run's error when
/// on_failure threw while the failed run's iterations were reported (`context` then describes
/// that failure, and every iteration was still reported). The pipeline can be filled again.
class CallbackError : public std::runtime_error {
 public:
  enum class Callback { source, on_retire, on_failure };
  CallbackError(Callback callback, std::int64_t iter, std::exception_ptr cause,
                const std::string& context = {});
  [[nodiscard]] Callback callback() const noexcept { return callback_; }
  [[nodiscard]] std::int64_t iter() const noexcept { return iter_; }
  [[nodiscard]] const std::exception_ptr& nested() const noexcept { return cause_; }

 private:
  Callback callback_;
  std::int64_t iter_;
  std::exception_ptr cause_;
};

/// An iteration did not retire within the retire timeout (or, on the sim backend, could never
/// retire). The message names every unfinished (task, iteration) and what it waits for.
class PipelineTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A task read the output of a task it does not declare as an intra-iteration dependency.
class UndeclaredDependency : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Misuse of a pipeline's API (fill twice, progress before fill, a broken pipeline, ...).
class PipelineStateError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace swp
