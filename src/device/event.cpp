#include "swp/device/event.hpp"

#include <algorithm>
#include <mutex>

namespace swp {

Clock::time_point Event::completed_at(std::uint64_t generation) const noexcept {
  return Clock::time_point(Clock::duration(
      when_[generation % remembered].load(std::memory_order_acquire)));
}

bool Event::add_waiter(std::uint64_t generation, EventWaiter& w) {
  std::lock_guard lock(lock_);
  if (reached(generation)) return false;
  waiters_.push_back({generation, &w});
  return true;
}

void Event::remove_waiter(EventWaiter& w) {
  std::lock_guard lock(lock_);
  std::erase_if(waiters_, [&](const Waiting& x) { return x.waiter == &w; });
}

void Event::complete(std::uint64_t generation, Clock::time_point when) noexcept {
  std::vector<EventWaiter*> ready;
  {
    std::lock_guard lock(lock_);
    when_[generation % remembered].store(when.time_since_epoch().count(),
                                         std::memory_order_release);
    completed_.store(generation, std::memory_order_release);
    auto done = std::partition(waiters_.begin(), waiters_.end(),
                               [&](const Waiting& w) { return w.generation > generation; });
    for (auto it = done; it != waiters_.end(); ++it) ready.push_back(it->waiter);
    waiters_.erase(done, waiters_.end());
  }
  for (EventWaiter* w : ready) w->event_completed();
}

}  // namespace swp
