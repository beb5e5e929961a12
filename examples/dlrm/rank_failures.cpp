#include "rank_failures.hpp"

#include <stdexcept>

#include "swp/comm/abort_on_failure.hpp"

namespace dlrm {

void RankFailures::record(const std::string& task, std::int64_t iter,
                          const std::exception_ptr& error) {
  std::string why = swp::detail::what_of(error);
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (const swp::CommAborted& aborted) {
    if (aborted.aborting_rank() == rank_) {
      // Our own abort (a task body failed here): that failure is what the run reports.
      failed_.store(true, std::memory_order_release);
      return;
    }
    // A peer's failure reached us: say whose, not only which of our operations it stopped.
    message = "rank " + std::to_string(rank_) + ": stopped in task '" + task + "' iteration " +
              std::to_string(iter) + " because " + world_.abort_reason();
  } catch (...) {
    message = "rank " + std::to_string(rank_) + ": task '" + task + "' failed in iteration " +
              std::to_string(iter) + ": " + why;
  }
  {
    std::lock_guard lock(mutex_);
    if (!first_.empty()) return;
    first_ = message;
    failed_.store(true, std::memory_order_release);
  }
  world_.abort("task '" + task + "' failed in iteration " + std::to_string(iter) + ": " + why);
}

void RankFailures::throw_if_failed() const {
  if (!failed()) return;
  std::lock_guard lock(mutex_);
  if (!first_.empty()) throw std::runtime_error(first_);
}

}  // namespace dlrm
