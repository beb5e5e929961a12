// ParkedWaitWatch: one timer per run for the deadlines of its parked waits.

#include "swp/engine/detail/parked_wait_watch.hpp"

#include <mutex>

namespace swp::detail {

ParkedWaitWatch::Id ParkedWaitWatch::begin(Clock::time_point deadline, Clock::duration interval) {
  const Id id = ++last_id_;
  {
    std::lock_guard lock(lock_);
    waiting_ = id;
    deadline_ = deadline;
  }
  if (timer_ == 0)
    timer_ = timers_.schedule(
        Clock::now() + interval, [this] { tick(); }, interval);
  return id;
}

void ParkedWaitWatch::end(Id id) noexcept {
  if (id == 0) return;
  std::lock_guard lock(lock_);
  if (waiting_ == id) waiting_ = 0;
}

void ParkedWaitWatch::stop() noexcept {
  if (timer_ == 0) return;
  try {
    timers_.cancel(timer_);
  } catch (...) {
    // Only a failing mutex (a system error) throws here; nothing better can be done.
  }
  timer_ = 0;
}

void ParkedWaitWatch::tick() noexcept {
  Id id = 0;
  Clock::time_point deadline;
  {
    std::lock_guard lock(lock_);
    id = waiting_;
    deadline = deadline_;
  }
  if (id == 0) return;
  if (Clock::now() >= deadline) expired_.store(id, std::memory_order_release);
  on_tick_();
}

}  // namespace swp::detail
