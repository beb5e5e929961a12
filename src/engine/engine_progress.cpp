// EngineCore's retirement: progress() (the caller's thread waits and helps) and next() (the
// awaiting coroutine suspends), drain, and the abort after a failure.

#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

// A wait that holds no thread: the awaiting coroutine is parked on the scheduler and looks at
// its condition again whenever something completes (Scheduler::notify), and on a timer tick,
// which also enforces the deadlines a blocking wait checks by itself (retire, sequencer).
class EngineCore::AsyncWait final : private Runnable {
 public:
  using Ready = bool (EngineCore::*)() const noexcept;

  AsyncWait(EngineCore& core, Ready ready, std::chrono::milliseconds limit)
      : core_(core), ready_(ready), limit_(limit) {}
  AsyncWait(const AsyncWait&) = delete;
  AsyncWait& operator=(const AsyncWait&) = delete;

  [[nodiscard]] bool await_ready() const noexcept { return (core_.*ready_)(); }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    handle_ = h;
    resumer_ = resumer_of(h);
    const auto now = Clock::now();
    deadline_ = now + limit_;
    const auto tick = core_.timeouts_.check_interval;
    timer_ = core_.runtime_.timers().schedule(now + tick, [this] { on_tick(); }, tick);
    return park();
  }

  /// True when the condition holds, false when the deadline passed first.
  bool await_resume() {
    if (timer_ != 0) core_.runtime_.timers().cancel(timer_);
    unwatch_device();
    return (core_.*ready_)() || !expired_.load(std::memory_order_acquire);
  }

 private:
  // Parks unless ready or expired; true: parked (and `this` may already be running elsewhere).
  bool park() {
    watch_device();
    return core_.runtime_.scheduler().park_unless(
        *this, [this] { return expired_.load(std::memory_order_acquire) || (core_.*ready_)(); });
  }

  void run() noexcept override {
    if (!park()) resume_on(resumer_, handle_);
  }

  void on_tick() noexcept {
    core_.sequencer_.check_timeouts(core_.timeouts_.sequencer);
    if (Clock::now() >= deadline_) expired_.store(true, std::memory_order_release);
    core_.runtime_.scheduler().notify();
  }

  // Once the oldest iteration retired, its device work decides whether its slot can take the
  // next batch: wake on its events too.
  void watch_device() {
    if (watching_ || ready_ != &EngineCore::retire_ready || !core_.retirable()) return;
    watching_ = true;
    core_.watch_device(core_.oldest_);
  }
  void unwatch_device() {
    if (watching_) core_.unwatch_device(core_.oldest_);
  }

  EngineCore& core_;
  Ready ready_;
  std::chrono::milliseconds limit_;
  std::coroutine_handle<> handle_;
  Resumer* resumer_ = nullptr;
  Clock::time_point deadline_;
  TimerQueue::Id timer_ = 0;
  std::atomic<bool> expired_{false};
  bool watching_ = false;
};

bool EngineCore::retirable() const noexcept {
  return complete(oldest_);
}

bool EngineCore::retire_ready() const noexcept {
  if (stop_.stop_requested()) return true;
  if (!retirable()) return false;
  // Retiring admits iteration oldest + slots into the slot oldest frees (when there is one).
  return oldest_ + static_cast<std::int64_t>(slots_.size()) >= end_ || device_done(oldest_);
}

bool EngineCore::drained() const noexcept { return release_->drained(); }

bool EngineCore::wait_drained() {
  return wait_for([&] { return drained(); }, timeouts_.drain);
}

bool EngineCore::wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  Scheduler& scheduler = runtime_.scheduler();
  // Run what is runnable first: usually that is all it takes, and it needs no clock reading.
  if (scheduler.drive_until(done, Clock::time_point::min())) return true;
  // Virtual time: the deadlines do not apply to the model (a task may model minutes), and a
  // run that cannot go on is known at once: drive_until returns when nothing is left to run.
  if (scheduler.virtual_time()) return scheduler.drive_until(done, Clock::time_point::max());
  const auto deadline = scheduler.now() + limit;
  while (!done()) {
    const auto now = scheduler.now();
    if (now >= deadline) return false;
    scheduler.drive_until(done, std::min(deadline, now + timeouts_.check_interval));
    if (sequencer_.check_timeouts(timeouts_.sequencer) > 0) scheduler.notify();
  }
  return true;
}

void EngineCore::time_out_retire() {
  // On virtual time a wait ends unfinished only when nothing is left to run (see wait_for).
  const bool stuck = runtime_.scheduler().virtual_time();
  const std::string what =
      "iteration " + std::to_string(oldest_) +
      (stuck ? " can never retire (nothing left to run: deadlock); unfinished:"
             : " did not retire within " + std::to_string(timeouts_.retire.count()) +
                   " ms; unfinished:");
  fail("", oldest_, std::make_exception_ptr(hang_error(what + diagnose())), FailureKind::timeout);
}

std::string EngineCore::describe(const Failure& failure) {
  std::string what = "an unknown exception";
  try {
    std::rethrow_exception(failure.error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (failure.kind != FailureKind::task) return what;
  return "task '" + failure.task + "' failed in iteration " + std::to_string(failure.iter) +
         ": " + what;
}

bool EngineCore::cancel(const std::string& reason) {
  std::lock_guard lock(live_mutex_);
  if (!live_.load(std::memory_order_acquire) || failed_.load(std::memory_order_acquire))
    return false;
  const std::string what = "pipeline cancelled: " + reason;
  fail("", -1, std::make_exception_ptr(Cancelled(what)), FailureKind::cancelled);
  return true;
}

Co<std::optional<std::int64_t>> EngineCore::next(std::stop_token token) {
  // Registered for the wait only; it runs at once if the token stopped already.
  std::stop_callback on_stop(token, [this] { cancel("stop requested"); });
  co_return co_await next();
}

void EngineCore::abort_run(bool drained) {
  // Everything released must have finished before state can be reset: cancellable waits were
  // woken by fail(); bodies run to their end.
  Failure failure = *failure_;
  filled_ = false;
  live_.store(false, std::memory_order_release);
  if (!drained) {
    broken_ = true;
    // The failure that started the drain is the cause: it stays in the message.
    throw hang_error("pipeline could not drain after a failure (" + describe(failure) +
                     "); still unfinished:" + diagnose());
  }
  if (failure.kind != FailureKind::task) std::rethrow_exception(failure.error);
  throw TaskError(failure.task, failure.iter, failure.error);
}

std::int64_t EngineCore::retire_oldest() {
  const std::int64_t retired_iter = oldest_;
  try {
    front_.retire(retired_iter, slot_index(retired_iter));
  } catch (...) {
    fail_callback(CallbackError::Callback::on_retire, retired_iter);
    return -1;
  }
  ++oldest_;
  release_->retired();
  return retired_iter;
}

std::optional<std::int64_t> EngineCore::progress() {
  if (!filled_) throw PipelineStateError("progress() called before fill_pipeline()");
  // A failure met while admitting (the source, a slot deadline) is still to surface, also when
  // nothing is left in flight (drain() relies on it).
  if (at_end() && !stop_.stop_requested()) return std::nullopt;
  // Already retirable (other threads ran it meanwhile): no wait, no scheduler call.
  if (!retirable() && !stop_.stop_requested()) {
    const bool retired = wait_for(oldest_done_, timeouts_.retire);
    if (!retired && !stop_.stop_requested()) time_out_retire();
  }
  // A failure admitting the next iteration (the source, a slot deadline) surfaces from the
  // next call: this one returns what it retired.
  if (!stop_.stop_requested())
    if (const std::int64_t retired_iter = retire_oldest(); retired_iter >= 0) return retired_iter;
  abort_run(wait_drained());
}

Co<std::optional<std::int64_t>> EngineCore::next() {
  if (!filled_) throw PipelineStateError("next() called before fill_pipeline()");
  // Virtual time advances only while someone drives the sim scheduler: progress() does.
  if (runtime_.scheduler().virtual_time()) co_return progress();
  if (at_end() && !stop_.stop_requested()) co_return std::nullopt;
  if (!co_await AsyncWait(*this, &EngineCore::retire_ready, timeouts_.retire) &&
      !stop_.stop_requested()) {
    if (!retirable()) {
      time_out_retire();
    } else {
      const std::int64_t admitted = oldest_ + static_cast<std::int64_t>(slots_.size());
      fail("", admitted, std::make_exception_ptr(slot_timeout(admitted)), FailureKind::timeout);
    }
  }
  if (!stop_.stop_requested())
    if (const std::int64_t retired_iter = retire_oldest(); retired_iter >= 0) co_return retired_iter;
  abort_run(co_await AsyncWait(*this, &EngineCore::drained, timeouts_.drain));
}

void EngineCore::drain() {
  if (!filled_) return;
  // Retire what is in flight without admitting more.
  end_ = std::min(end_, next_admit_);
  while (progress()) {
  }
  filled_ = false;
  live_.store(false, std::memory_order_release);
}

}  // namespace swp::detail
