#pragma once
// RequestLedger: every request one load level sent, and what came back for it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "latency_stats.hpp"
#include "protocol.hpp"
#include "request_pool.hpp"

namespace service {

/// A timed request, as kept for --trace: when it was sent, and how long its answer took.
struct TimedRequest {
  std::chrono::steady_clock::time_point sent;
  double latency_us;
};

/// Requests get consecutive ids from `first_id`; an answer is correct when it is the first
/// for its id, has Status::ok and the result the pool expects. Latency (send to answer) is
/// kept for correct answers to requests sent inside the measurement window; throughput counts
/// correct answers received inside it. lost() = sent − correct: a wrong answer, a rejection or
/// no answer at all loses the request.
class RequestLedger {
 public:
  using Clock = std::chrono::steady_clock;

  RequestLedger(const RequestPool& pool, std::uint64_t first_id)
      : pool_(pool), first_id_(first_id) {}

  /// The measurement window (requests sent in it are timed; answers received in it count).
  void set_window(Clock::time_point begin, Clock::time_point end) {
    begin_ = begin;
    end_ = end;
  }

  /// Room for `n` latency samples, so that keeping them never reallocates mid-level.
  void reserve(std::size_t n) { latencies_.reserve(n); }

  /// Also keep each timed request's send time with its latency (timed()).
  void keep_timed() { keep_timed_ = true; }
  [[nodiscard]] std::deque<TimedRequest>& timed() noexcept { return timed_; }

  /// Records a request sent at `now`; returns its id.
  std::uint64_t sent(Clock::time_point now) {
    entries_.push_back({now, now >= begin_ && now < end_, State::pending});
    return first_id_ + entries_.size() - 1;
  }

  /// Records an answer received at `now`.
  void received(const Response& r, Clock::time_point now) {
    if (r.id < first_id_ || r.id - first_id_ >= entries_.size()) {
      ++wrong_;  // an id never sent
      return;
    }
    Entry& e = entries_[r.id - first_id_];
    if (e.state != State::pending) {
      ++wrong_;  // a second answer
      return;
    }
    ++answered_;
    if (r.status == Status::rejected) {
      e.state = State::rejected;
      ++rejected_;
      return;
    }
    if (r.status != Status::ok || r.result != pool_.expected(r.id)) {
      e.state = State::wrong;
      ++wrong_;
      return;
    }
    e.state = State::correct;
    ++correct_;
    if (now >= begin_ && now < end_) ++correct_in_window_;
    if (e.measured) {
      const double us = std::chrono::duration<double, std::micro>(now - e.sent).count();
      latencies_.add(us);
      if (keep_timed_) timed_.push_back({e.sent, us});
    }
  }

  [[nodiscard]] std::uint64_t sent_count() const noexcept { return entries_.size(); }
  [[nodiscard]] std::uint64_t outstanding() const noexcept { return entries_.size() - answered_; }
  [[nodiscard]] std::uint64_t correct() const noexcept { return correct_; }
  [[nodiscard]] std::uint64_t wrong() const noexcept { return wrong_; }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] std::uint64_t lost() const noexcept { return entries_.size() - correct_; }
  [[nodiscard]] std::uint64_t correct_in_window() const noexcept { return correct_in_window_; }
  [[nodiscard]] LatencyStats& latencies() noexcept { return latencies_; }

 private:
  enum class State : std::uint8_t { pending, correct, wrong, rejected };
  struct Entry {
    Clock::time_point sent;
    bool measured;
    State state;
  };

  const RequestPool& pool_;
  std::uint64_t first_id_;
  Clock::time_point begin_ = Clock::time_point::max();
  Clock::time_point end_ = Clock::time_point::max();
  // A deque: growing never copies what is there (a vector's reallocation of megabytes, and
  // the page faults of its new block, would stall the generator in the middle of a level).
  std::deque<Entry> entries_;
  std::uint64_t answered_ = 0;
  std::uint64_t correct_ = 0;
  std::uint64_t wrong_ = 0;
  std::uint64_t rejected_ = 0;
  std::uint64_t correct_in_window_ = 0;
  LatencyStats latencies_;
  bool keep_timed_ = false;
  std::deque<TimedRequest> timed_;
};

}  // namespace service
