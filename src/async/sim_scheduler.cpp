#include "swp/async/sim_scheduler.hpp"

namespace swp {

void SimScheduler::post(Runnable& r) noexcept {
  std::lock_guard lock(mutex_);
  r.next_runnable = nullptr;
  if (tail_ != nullptr) {
    tail_->next_runnable = &r;
  } else {
    head_ = &r;
  }
  tail_ = &r;
}

void SimScheduler::post_at(Clock::time_point when, Runnable& r) noexcept {
  std::lock_guard lock(mutex_);
  timers_.push(Timer{when < now_ ? now_ : when, timer_order_++, &r});
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
      if (head_ != nullptr) {
        next = head_;
        head_ = next->next_runnable;
        if (head_ == nullptr) tail_ = nullptr;
      } else if (!timers_.empty()) {
        const Timer t = timers_.top();
        if (deadline == Clock::time_point::min()) return false;  // runnable work only
        if (t.when > deadline) {
          if (deadline > now_) now_ = deadline;
          return false;
        }
        timers_.pop();
        now_ = t.when;
        next = t.runnable;
      }
    }
    if (next == nullptr) return done();  // nothing runnable, no timer: stuck
    next->run();
  }
}

}  // namespace swp
