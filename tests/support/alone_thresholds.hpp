#pragma once
// ScopedAloneThresholds: sets the thresholds of the alone window (detail::AloneWindow) for a
// scope, so that the caller goes alone in a test's short run and in the sanitizers' builds,
// where every task takes far longer than the default 250 ns; restores the old ones as it ends.

#include <chrono>

#include "swp/engine/detail/alone_window.hpp"

namespace swp::test {

class ScopedAloneThresholds {
 public:
  // The defaults: a window may open after any 32 retirements of tasks shorter than 1 ms.
  explicit ScopedAloneThresholds(detail::AloneWindow::Thresholds thresholds = {
                                     .period = std::chrono::nanoseconds(0),
                                     .task_time = std::chrono::milliseconds(1)})
      : old_(detail::AloneWindow::thresholds()) {
    detail::AloneWindow::set_thresholds(thresholds);
  }
  ~ScopedAloneThresholds() { detail::AloneWindow::set_thresholds(old_); }
  ScopedAloneThresholds(const ScopedAloneThresholds&) = delete;
  ScopedAloneThresholds& operator=(const ScopedAloneThresholds&) = delete;

 private:
  detail::AloneWindow::Thresholds old_;
};

}  // namespace swp::test
