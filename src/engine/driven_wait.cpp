// DrivenWait: blocking waits that drive the scheduler on the waiting thread.

#include "swp/engine/detail/driven_wait.hpp"

#include <algorithm>
#include <thread>

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
  while (!ready()) drive_slice(ready, scheduler_.now() + timeouts_.check_interval);
  return true;
}

void DrivenWait::drive_slice(const std::function<bool()>& done, Clock::time_point until) {
  if (scheduler_.drive_until(done, until)) return;
  // Back before `until` with `done` false: the scheduler cannot drive from this thread (an
  // AsioScheduler called inside its strand, whose handlers wait for this one to return). It
  // cannot wake this thread either (notify() wakes only its own drivers), so the rest of the
  // slice is slept: one look per check interval instead of a busy loop burning a core.
  const auto left = until - scheduler_.now();
  if (left > Clock::duration::zero()) std::this_thread::sleep_for(left);
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
    drive_slice(done, std::min(deadline, now + timeouts_.check_interval));
    if (on_check_) on_check_();
  }
  return true;
}

}  // namespace swp::detail
