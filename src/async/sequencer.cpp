#include "swp/async/sequencer.hpp"

#include "swp/async/detail/sorted_list.hpp"

#include <chrono>
#include <string>
#include <utility>

namespace swp {

std::string SubmissionSequencer::TurnAwaiter::who() const {
  if (!lazy_name_) return who_;
  return std::string(name_) + " (iter " + std::to_string(iter_) + ")";
}

// Inserts from the tail: turns are mostly awaited in increasing order. Under mutex_.
void SubmissionSequencer::link(TurnAwaiter& w) noexcept {
  detail::insert_sorted_from_tail(head_, tail_, w, &TurnAwaiter::seq_, &TurnAwaiter::prev_,
                                  &TurnAwaiter::next_);
  w.parked_ = true;
  ++parked_;
}

void SubmissionSequencer::unlink(TurnAwaiter& w) noexcept {
  detail::unlink_from(head_, tail_, w, &TurnAwaiter::prev_, &TurnAwaiter::next_);
  w.parked_ = false;
  --parked_;
}

bool SubmissionSequencer::park(TurnAwaiter& w) {
  std::lock_guard lock(mutex_);
  if (next_ == w.seq_) return false;
  // No clock read here: check_timeouts stamps the wait when it first sees it.
  w.seen_ = false;
  link(w);
  return true;
}

bool SubmissionSequencer::unpark(TurnAwaiter& w) {
  std::lock_guard lock(mutex_);
  if (!w.parked_) return false;  // advance, a timeout or cancel took it: they resume it
  unlink(w);
  return true;
}

void SubmissionSequencer::advance() {
  TurnAwaiter* ready = nullptr;
  {
    std::lock_guard lock(mutex_);
    ++next_;
    // Sorted by turn: the holder of next_ follows any waiter of a turn already passed (a
    // protocol error that only check_timeouts resolves).
    TurnAwaiter* w = head_;
    while (w != nullptr && w->seq_ < next_) w = w->next_;
    if (w != nullptr && w->seq_ == next_) {
      unlink(*w);
      ready = w;
    }
  }
  // Claimed outside the lock: resuming may run the waiter inline, which takes its turn and
  // calls advance() again.
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
  return parked_;
}

std::size_t SubmissionSequencer::check_timeouts(Clock::duration timeout) {
  // Expired waiters move to a local list through their own links: the common call, which
  // finds nothing expired, allocates nothing.
  TurnAwaiter* expired = nullptr;
  TurnAwaiter** expired_tail = &expired;  // appended in turn order
  std::size_t count = 0;
  {
    std::lock_guard lock(mutex_);
    if (head_ == nullptr) return 0;
    const auto now = scheduler_.now();
    for (TurnAwaiter* w = head_; w != nullptr;) {
      TurnAwaiter* next = w->next_;
      if (!w->seen_) {
        // First seen now: it parked after the previous check. Timing it from here makes the
        // deadline late by at most one check interval, never early.
        w->seen_ = true;
        w->since_ = now;
      } else if (now - w->since_ >= timeout) {
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - w->since_).count();
        w->error_ = std::make_exception_ptr(SequencerTimeout(
            w->who() + " waited " + std::to_string(waited) + " ms for submission turn " +
            std::to_string(w->seq_) + ", but the sequencer is stuck at turn " +
            std::to_string(next_) + " (the holder of that turn never submitted)"));
        unlink(*w);
        *expired_tail = w;
        expired_tail = &w->next_;
        ++count;
      }
      w = next;
    }
  }
  while (expired != nullptr) {
    TurnAwaiter* w = std::exchange(expired, expired->next_);  // read first: claim may free w
    w->claim();
  }
  return count;
}

void SubmissionSequencer::cancel(const std::exception_ptr& error) {
  TurnAwaiter* all = nullptr;
  {
    std::lock_guard lock(mutex_);
    all = std::exchange(head_, nullptr);
    tail_ = nullptr;
    parked_ = 0;
    for (TurnAwaiter* w = all; w != nullptr; w = w->next_) {
      w->parked_ = false;
      w->error_ = error;
    }
  }
  while (all != nullptr) {
    TurnAwaiter* w = std::exchange(all, all->next_);  // read first: claim may free w
    w->prev_ = nullptr;
    w->next_ = nullptr;
    w->claim();
  }
}

}  // namespace swp
