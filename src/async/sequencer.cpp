#include "swp/async/sequencer.hpp"

#include <vector>

namespace swp {

bool SubmissionSequencer::park(TurnAwaiter& w) {
  std::lock_guard lock(mutex_);
  if (next_ == w.seq_) return false;
  w.since_ = scheduler_.now();
  waiters_.emplace(w.seq_, &w);
  return true;
}

bool SubmissionSequencer::unpark(TurnAwaiter& w) {
  std::lock_guard lock(mutex_);
  auto it = waiters_.find(w.seq_);
  if (it == waiters_.end() || it->second != &w) return false;
  waiters_.erase(it);
  return true;
}

void SubmissionSequencer::advance() {
  TurnAwaiter* ready = nullptr;
  {
    std::lock_guard lock(mutex_);
    ++next_;
    if (auto it = waiters_.find(next_); it != waiters_.end()) {
      ready = it->second;
      waiters_.erase(it);
    }
  }
  if (ready != nullptr) ready->claim();
}

std::uint64_t SubmissionSequencer::next() const {
  std::lock_guard lock(mutex_);
  return next_;
}

void SubmissionSequencer::reset() {
  std::lock_guard lock(mutex_);
  next_ = 0;
}

std::size_t SubmissionSequencer::waiting() const {
  std::lock_guard lock(mutex_);
  return waiters_.size();
}

std::size_t SubmissionSequencer::check_timeouts(Clock::duration timeout) {
  std::vector<TurnAwaiter*> expired;
  {
    std::lock_guard lock(mutex_);
    const auto now = scheduler_.now();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (now - it->second->since_ < timeout) {
        ++it;
        continue;
      }
      auto* w = it->second;
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - w->since_).count();
      w->error_ = std::make_exception_ptr(SequencerTimeout(
          w->who_ + " waited " + std::to_string(waited) + " ms for submission turn " +
          std::to_string(w->seq_) + ", but the sequencer is stuck at turn " +
          std::to_string(next_) + " (the holder of that turn never submitted)"));
      expired.push_back(w);
      it = waiters_.erase(it);
    }
  }
  for (auto* w : expired) w->claim();
  return expired.size();
}

void SubmissionSequencer::cancel(const std::exception_ptr& error) {
  std::map<std::uint64_t, TurnAwaiter*> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(waiters_);
  }
  for (auto& [seq, w] : all) {
    w->error_ = error;
    w->claim();
  }
}

}  // namespace swp
