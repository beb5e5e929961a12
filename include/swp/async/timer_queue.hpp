#pragma once
// TimerQueue: callbacks at given times, for deadlines no thread is blocked on.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "swp/async/scheduler.hpp"
#include "swp/async/thread_start.hpp"

namespace swp {

/// Calls functions at given (steady clock) times on one background thread, started on first
/// use. A blocking wait checks its own deadline; an asynchronous one (a coroutine awaiting a
/// pipeline's next iteration) has no thread to do that, so it arms a timer here instead.
///
/// Completion: a callback runs once, on the timer thread, at or soon after its time; keep it
/// short (post work elsewhere). Cancellation: `cancel` returns true when the callback had not
/// started; when it is running at that moment, `cancel` first waits for it to return (unless
/// called from the callback itself), so what the callback touches may be freed afterwards.
/// Destruction cancels everything pending and joins the thread.
///
/// Example:
/// ```
/// swp::TimerQueue timers;
/// auto id = timers.schedule(swp::Clock::now() + 30s, [&] { op.time_out(); });
/// ...
/// timers.cancel(id);
/// ```
class TimerQueue {
 public:
  using Id = std::uint64_t;

  TimerQueue() = default;
  /// Its thread (started by the first schedule()) begins with begin_thread: named
  /// "swp-timers", then `on_start` (ThreadStart::Role::timer).
  explicit TimerQueue(ThreadStartHook on_start) : on_start_(std::move(on_start)) {}
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  /// Arms `fn` to run at `when` (at once if that has passed), and then every `period` after
  /// each run when `period` is positive, until cancelled; returns its id (never 0).
  Id schedule(Clock::time_point when, std::function<void()> fn,
              Clock::duration period = Clock::duration::zero());

  /// Disarms `id`; see the class comment. Unknown or already finished ids return false.
  bool cancel(Id id);

 private:
  void loop(const std::stop_token& stop);

  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable finished_;
  struct Entry {
    Id id;
    Clock::duration period;
    std::function<void()> fn;
  };
  std::multimap<Clock::time_point, Entry> pending_;
  Id next_id_ = 1;
  Id running_ = 0;                  // the id whose callback runs now (0: none)
  bool running_cancelled_ = false;  // cancel() came while it ran: do not re-arm it
  std::thread::id timer_thread_;
  ThreadStartHook on_start_;
  std::jthread thread_;  // last: joined first
};

}  // namespace swp
