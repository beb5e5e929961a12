// DrivenWait: blocking waits that drive the scheduler on the waiting thread.

#include "swp/engine/detail/driven_wait.hpp"

#include <algorithm>

namespace swp::detail {

bool DrivenWait::until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  if (scheduler_.drive_until(done, Clock::time_point::min())) return true;
  return past_runnable(done, limit);
}

bool DrivenWait::until(const std::function<bool()>& done, std::chrono::milliseconds limit,
                       std::optional<Clock::time_point>& started) {
  if (scheduler_.drive_until(done, Clock::time_point::min())) return true;
  return past_runnable(done, time_left(limit, started));
}

bool DrivenWait::until_ever(const std::function<bool()>& ready) {
  // Virtual time: only what is scheduled can make it true; when nothing is, it never will.
  if (scheduler_.virtual_time()) return scheduler_.drive_until(ready, Clock::time_point::max());
  while (!ready()) scheduler_.drive_until(ready, scheduler_.now() + timeouts_.check_interval);
  return true;
}

std::chrono::milliseconds DrivenWait::time_left(std::chrono::milliseconds limit,
                                                std::optional<Clock::time_point>& started) const {
  const auto now = scheduler_.now();
  if (!started) started = now;
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(limit - (now - *started)),
                  std::chrono::milliseconds(0));
}

bool DrivenWait::past_runnable(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  if (scheduler_.virtual_time()) return scheduler_.drive_until(done, Clock::time_point::max());
  const auto deadline = scheduler_.now() + limit;
  while (!done()) {
    const auto now = scheduler_.now();
    if (now >= deadline) return false;
    scheduler_.drive_until(done, std::min(deadline, now + timeouts_.check_interval));
    if (on_check_) on_check_();
  }
  return true;
}

}  // namespace swp::detail
