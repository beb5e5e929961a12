// AloneWindow: when the driving thread runs a pipeline's short tasks alone for a while.

#include "swp/engine/detail/alone_window.hpp"

#include <atomic>
#include <bit>
#include <cstdint>

namespace swp::detail {

namespace {

// look_between_windows finds a look point with a mask.
static_assert(std::has_single_bit(static_cast<std::uint64_t>(AloneWindow::look_every)));

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
  // caller's next admissions. Counts only, per iteration; the clock at each look_every-th.
  std::int64_t i = looked_upto_;
  std::size_t e = looked_entry_;
  bool opened = false;
  while (i < oldest && !opened) {
    const bool helped = entries[e].helped.load(std::memory_order_relaxed);
    ++i;
    e = e + 1 == entries.size() ? 0 : e + 1;
    if (period_retired_ == 0) {
      period_since_ = std::chrono::steady_clock::now();
      period_helped_ = 0;
    }
    ++period_retired_;
    period_helped_ += helped ? 1 : 0;
    if ((period_retired_ & (look_every - 1)) == 0) opened = decide();
  }
  looked_upto_ = i;
  looked_entry_ = e;
  // The rest retired into the window that opened: help there closes it (look).
  if (opened && i < oldest) look(oldest, entries);
}

bool AloneWindow::decide() noexcept {
  const auto took = std::chrono::steady_clock::now() - period_since_;
  const Thresholds limits = thresholds();
  if (took < limits.period) return false;
  const auto tasks = period_retired_ * static_cast<std::int64_t>(tasks_);
  if (share * period_helped_ <= period_retired_ && took < tasks * limits.task_time)
    left_ = window * period_retired_;
  period_retired_ = 0;
  return left_ > 0;
}

}  // namespace swp::detail
