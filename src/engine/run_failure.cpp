// RunFailure: the first root cause of a run's failure, and its words.

#include "swp/engine/detail/run_failure.hpp"

#include <mutex>
#include <new>

#include "swp/engine/errors.hpp"

namespace swp::detail {

std::exception_ptr Failure::run_error() const {
  return kind == FailureKind::task ? std::make_exception_ptr(TaskError(task, iter, error)) : error;
}

std::string Failure::describe() const {
  std::string what = "an unknown exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (kind != FailureKind::task) return what;
  return "task '" + task + "' failed in iteration " + std::to_string(iter) + ": " + what;
}

std::optional<std::string> RunFailure::record(const Failure& failure) {
  // A later failure (every instance of a stopping run that fails on its own) changes nothing:
  // known without the lock or a reason's allocation. The lock below decides races.
  if (failed()) return std::nullopt;
  // The reason is made before the lock (it allocates), and kept only by the first.
  std::string reason;
  if (failure.kind == FailureKind::task) {
    reason = "task '" + failure.task + "' failed in iteration " + std::to_string(failure.iter);
  } else if (failure.kind == FailureKind::timeout) {
    reason = "pipeline timed out";
  } else {
    try {
      std::rethrow_exception(failure.error);
    } catch (const std::exception& e) {  // a CallbackError, or cancel()'s Cancelled
      reason = e.what();
    } catch (...) {
    }
  }
  std::lock_guard lock(lock_);
  if (failure_) return std::nullopt;  // the first root cause wins
  failure_ = failure;
  failed_.store(true, std::memory_order_release);
  return reason;
}

Failure RunFailure::snapshot() const {
  std::lock_guard lock(lock_);
  if (failure_) return *failure_;
  return Failure{.task = "",
                 .iter = -1,
                 .error = std::make_exception_ptr(std::bad_alloc()),
                 .kind = FailureKind::callback};
}

void RunFailure::reset() noexcept {
  std::lock_guard lock(lock_);
  failure_.reset();
  failed_.store(false, std::memory_order_release);
}

void RunFailure::tell_run_failed(const Failure& failure) const noexcept {
  if (!on_run_failed_) return;
  try {
    on_run_failed_(failure.run_error());
  } catch (...) {
    // Called where the run fails: there is nobody to report to, and the run's own error
    // surfaces from progress() anyway.
  }
}

}  // namespace swp::detail
