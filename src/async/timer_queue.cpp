#include "swp/async/timer_queue.hpp"

namespace swp {

TimerQueue::~TimerQueue() {
  if (!thread_.joinable()) return;
  thread_.request_stop();  // wakes the condition_variable_any waits below
  thread_.join();
}

TimerQueue::Id TimerQueue::schedule(Clock::time_point when, std::function<void()> fn,
                                    Clock::duration period) {
  std::lock_guard lock(mutex_);
  const Id id = next_id_++;
  const bool earliest = pending_.empty() || when < pending_.begin()->first;
  pending_.emplace(when, Entry{id, period, std::move(fn)});
  if (!thread_.joinable()) {
    thread_ = std::jthread([this](const std::stop_token& stop) { loop(stop); });
    timer_thread_ = thread_.get_id();
  } else if (earliest) {
    wake_.notify_one();
  }
  return id;
}

bool TimerQueue::cancel(Id id) {
  if (id == 0) return false;  // never an armed id
  std::unique_lock lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.id == id) {
      pending_.erase(it);
      return true;
    }
  }
  if (running_ == id) {
    running_cancelled_ = true;
    if (std::this_thread::get_id() != timer_thread_)
      finished_.wait(lock, [&] { return running_ != id; });
  }
  return false;
}

void TimerQueue::loop(const std::stop_token& stop) {
  begin_thread({ThreadStart::Role::timer, {}, 0}, on_start_);
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (pending_.empty()) {
      wake_.wait(lock, stop, [&] { return !pending_.empty(); });
      continue;
    }
    const auto when = pending_.begin()->first;
    if (Clock::now() < when) {
      wake_.wait_until(lock, stop, when,
                       [&] { return pending_.empty() || pending_.begin()->first < when; });
      continue;
    }
    auto node = pending_.extract(pending_.begin());
    running_ = node.mapped().id;
    running_cancelled_ = false;
    lock.unlock();
    node.mapped().fn();
    lock.lock();
    if (node.mapped().period > Clock::duration::zero() && !running_cancelled_) {
      node.key() = Clock::now() + node.mapped().period;
      pending_.insert(std::move(node));
    }
    running_ = 0;
    finished_.notify_all();
  }
}

}  // namespace swp
