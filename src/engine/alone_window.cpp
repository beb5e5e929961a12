// AloneWindow: when the driving thread runs a pipeline's short tasks alone for a while.

#include "swp/engine/detail/alone_window.hpp"

#include <atomic>

namespace swp::detail {

namespace {

// AloneWindow::Thresholds, in nanoseconds (read at each decision, every look_every
// retirements).
std::atomic<std::int64_t> period_ns{
    std::chrono::nanoseconds(AloneWindow::default_period).count()};
std::atomic<std::int64_t> task_time_ns{AloneWindow::default_task_time.count()};

}  // namespace

void AloneWindow::set_thresholds(Thresholds thresholds) noexcept {
  period_ns.store(thresholds.period.count(), std::memory_order_relaxed);
  task_time_ns.store(thresholds.task_time.count(), std::memory_order_relaxed);
}

AloneWindow::Thresholds AloneWindow::thresholds() noexcept {
  return {std::chrono::nanoseconds(period_ns.load(std::memory_order_relaxed)),
          std::chrono::nanoseconds(task_time_ns.load(std::memory_order_relaxed))};
}

void AloneWindow::reset(std::int64_t base, std::size_t base_entry, std::size_t tasks) noexcept {
  tasks_ = tasks;
  looked_upto_ = base;
  looked_entry_ = base_entry;
  period_retired_ = 0;
  left_ = 0;
}

void AloneWindow::look_between_windows(std::int64_t oldest,
                                       std::span<const IterationSync> entries) noexcept {
  // The entries of the iterations retired since the last call are not reused before the
  // caller's next admissions.
  for (; looked_upto_ < oldest; ++looked_upto_) {
    retired(entries[looked_entry_].helped.load(std::memory_order_relaxed));
    looked_entry_ = looked_entry_ + 1 == entries.size() ? 0 : looked_entry_ + 1;
  }
}

void AloneWindow::retired(bool helped) noexcept {
  if (left_ > 0) {
    // A window's own iterations say nothing.
    if (helped) close();
    return;
  }
  if (period_retired_++ == 0) {
    period_since_ = std::chrono::steady_clock::now();
    period_helped_ = 0;
  }
  if (helped) ++period_helped_;
  if (period_retired_ % look_every != 0) return;
  const auto took = std::chrono::steady_clock::now() - period_since_;
  const Thresholds limits = thresholds();
  if (took < limits.period) return;
  const auto tasks = period_retired_ * static_cast<std::int64_t>(tasks_);
  if (share * period_helped_ <= period_retired_ && took < tasks * limits.task_time)
    left_ = window * period_retired_;
  period_retired_ = 0;
}

}  // namespace swp::detail
