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
