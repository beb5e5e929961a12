#include "swp/async/sim_scheduler.hpp"

#include <algorithm>
#include <functional>

namespace swp {

void SimScheduler::post(Runnable& r) noexcept {
  std::lock_guard lock(mutex_);
  queue_.push(r);
}

void SimScheduler::post_at(Clock::time_point when, Runnable& r) noexcept {
  std::lock_guard lock(mutex_);
  timers_.push_back(Timer{when < now_ ? now_ : when, timer_order_++, &r});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
}

bool SimScheduler::cancel_at(Runnable& r) noexcept {
  std::lock_guard lock(mutex_);
  const auto kept = std::remove_if(timers_.begin(), timers_.end(),
                                   [&r](const Timer& t) { return t.runnable == &r; });
  if (kept == timers_.end()) return false;
  timers_.erase(kept, timers_.end());
  std::make_heap(timers_.begin(), timers_.end(), std::greater<>());
  return true;
}

Clock::time_point SimScheduler::now() const {
  std::lock_guard lock(mutex_);
  return now_;
}

bool SimScheduler::drive_until(const std::function<bool()>& done, Clock::time_point deadline) {
  for (;;) {
    if (done()) return true;
    Runnable* next = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!queue_.empty()) {
        next = queue_.pop();
      } else if (!timers_.empty()) {
        const Timer t = timers_.front();
        if (deadline == Clock::time_point::min()) return false;  // runnable work only
        if (t.when > deadline) {
          if (deadline > now_) now_ = deadline;
          return false;
        }
        std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
        timers_.pop_back();
        now_ = t.when;
        next = t.runnable;
      }
    }
    if (next == nullptr) return done();  // nothing runnable, no timer: stuck
    next->run();
  }
}

}  // namespace swp
