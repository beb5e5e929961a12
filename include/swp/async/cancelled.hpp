#pragma once
// Cancellation: a stop signal with a reason, and the exception cancelled awaits throw.

#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>

namespace swp {

/// Thrown from a `co_await` (future, sequencer turn, simulated CPU work) whose coroutine's stop
/// signal fired while it waited. The message is the signal's reason (a timeout naming the stuck
/// task, an error elsewhere in the pipeline, a user's cancellation).
class Cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A std::stop_source that remembers why it stopped. Coroutines started with a StopSignal
/// (`Co::start(..., &signal)`) pass it to their children; every cancellable await inside them
/// wakes with `Cancelled(reason)` when `request_stop` is called.
///
/// Example:
/// ```
/// swp::StopSignal stop;
/// co.start(&lane, on_done, ctx, &stop);
/// stop.request_stop("iteration 5 timed out: Forward waits for H2D");
/// ```
class StopSignal {
 public:
  /// Fires the signal (first reason wins). Callbacks run on this thread.
  void request_stop(const std::string& reason) {
    {
      std::lock_guard lock(mutex_);
      if (reason_.empty()) reason_ = reason;
    }
    source_.request_stop();
  }

  [[nodiscard]] bool stop_requested() const noexcept { return token_.stop_requested(); }
  [[nodiscard]] const std::stop_token& token() const noexcept { return token_; }

  [[nodiscard]] std::string reason() const {
    std::lock_guard lock(mutex_);
    return reason_.empty() ? std::string("cancelled") : reason_;
  }

  /// A fresh, unfired signal. Precondition: nothing waits on the old one.
  void reset() {
    std::lock_guard lock(mutex_);
    source_ = std::stop_source();
    token_ = source_.get_token();
    reason_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::stop_source source_;
  std::stop_token token_ = source_.get_token();
  std::string reason_;
};

}  // namespace swp
