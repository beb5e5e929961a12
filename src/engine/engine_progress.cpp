// EngineCore's retirement: progress() (the caller's thread waits and helps) and next() (the
// awaiting coroutine suspends), drain, and the abort after a failure.

#include <algorithm>
#include <optional>
#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

template <bool (EngineCore::*Ready)() const noexcept>
ParkedWait EngineCore::parked(std::chrono::milliseconds limit, const StopSignal* abandon,
                              bool wake_on_device) {
  const ParkedWait::Condition ready{this, [](const void* core) noexcept {
                                      return (static_cast<const EngineCore*>(core)->*Ready)();
                                    }};
  ParkedWait::ExtraWakeups device;
  // Once the oldest iteration retired, its device work decides whether its slot can take the
  // next batch: its events wake the wait too.
  if (wake_on_device)
    device = {this,
              [](void* self) {
                auto& core = *static_cast<EngineCore*>(self);
                if (!core.retirable()) return false;
                core.watch_device(core.oldest_);
                return true;
              },
              [](void* self) {
                auto& core = *static_cast<EngineCore*>(self);
                core.unwatch_device(core.oldest_);
              }};
  return ParkedWait(runtime_.scheduler(), parked_waits_, ready, limit, timeouts_.check_interval,
                    abandon, device);
}

bool EngineCore::retirable() const noexcept { return complete(oldest_, sync_[oldest_entry_]); }

bool EngineCore::retire_ready() const noexcept {
  if (stop_.stop_requested()) return true;
  if (!retirable() || device_holds_oldest()) return false;
  // Retiring admits iteration oldest + slots into the slot oldest frees (when there is one).
  return oldest_ + static_cast<std::int64_t>(depth_) >= end_ || device_done(oldest_);
}

bool EngineCore::drained() const noexcept { return release_->drained() && front_.source_idle(); }

void EngineCore::stop_source() noexcept {
  try {
    front_.end_source();
  } catch (...) {
    // Ending a source only sets flags and fires a stop signal; nothing to report.
  }
}

bool EngineCore::wait_drained() {
  return driven_.until([&] { return drained(); }, timeouts_.drain);
}

void EngineCore::time_out_retire() {
  // On virtual time a wait ends unfinished only when nothing is left to run (DrivenWait).
  const bool stuck = runtime_.scheduler().virtual_time();
  const std::string what =
      "iteration " + std::to_string(oldest_) +
      (stuck ? " can never retire (nothing left to run: deadlock); unfinished:"
             : " did not retire within " + std::to_string(timeouts_.retire.count()) +
                   " ms; unfinished:");
  const HangReport report = hang_report();
  fail("", oldest_, std::make_exception_ptr(report.error(what + report.unfinished())),
       FailureKind::timeout);
}

bool EngineCore::cancel(const std::string& reason) {
  std::lock_guard lock(live_mutex_);
  if (!live_.load(std::memory_order_acquire) || failure_.failed())
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
  const Failure failure = failure_.snapshot();
  parked_waits_.stop();
  filled_ = false;
  live_.store(false, std::memory_order_release);
  if (!drained) {
    broken_ = true;
    // The failure that started the drain is the cause: it stays in the message. Bodies still
    // run in the contexts of the iterations in flight: none can be handed to on_failure.
    const HangReport report = hang_report();
    throw report.error("pipeline could not drain after a failure (" + failure.describe() +
                       "); iterations " + std::to_string(oldest_) + ".." +
                       std::to_string(next_admit_ - 1) +
                       " did not retire and were not reported; still unfinished:" +
                       report.unfinished());
  }
  claims_.end_all();  // drained: no instance holds its lane
  // Every iteration in flight is accounted for (FailurePolicy): failed or cancelled.
  std::exception_ptr report_error;  // what the first throwing on_failure threw
  std::int64_t report_iter = -1;
  for (; oldest_ < next_admit_; count_retired()) {
    try {
      front_.retire(oldest_, oldest_entry_, abandoned_error(failure, oldest_));
    } catch (...) {
      if (!report_error) {
        report_error = std::current_exception();
        report_iter = oldest_;
      }
    }
  }
  release_retired(next_admit_);
  // Then the batches taken but never admitted (the push form's queue, a fetched batch).
  try {
    front_.run_ended(failure.kind == FailureKind::cancelled
                         ? failure.error
                         : std::make_exception_ptr(Cancelled(
                               "batch not admitted: the run failed: " + failure.describe())));
  } catch (...) {
    if (!report_error) report_error = std::current_exception();
  }
  if (report_error)
    throw CallbackError(CallbackError::Callback::on_failure, report_iter, report_error,
                        "while reporting the run's failure: " + failure.describe());
  std::rethrow_exception(failure.run_error());
}

std::exception_ptr EngineCore::task_error(std::int64_t iter, TaskIndex task) const {
  return std::make_exception_ptr(
      TaskError(graph_.name(task), iter, sync_of(iter).instances[task].error()));
}

std::exception_ptr EngineCore::abandoned_error(const Failure& failure, std::int64_t iter) const {
  if (auto own = iteration_error(iter)) return own;  // skip: it had failed before the run did
  if (iter == failure.iter) {
    return failure.run_error();  // a task's, a deadline's or a callback's in this iteration
  }
  if (failure.kind == FailureKind::cancelled) return failure.error;
  return std::make_exception_ptr(Cancelled("iteration " + std::to_string(iter) +
                                           " cancelled: the run failed: " + failure.describe()));
}

// Inline into its two callers (progress()'s loop and next()): once per iteration, on the
// caller's path.
[[gnu::always_inline]] inline std::int64_t EngineCore::retire_oldest() {
  // The run may have failed since the caller last looked (its failing instance completes the
  // iteration right after fail(), whose stores a completion seen by the caller makes
  // visible): an iteration of a failed run never retires, it is reported by the abort.
  if (failure_.failed()) return -1;
  const std::int64_t retired_iter = oldest_;
  // The iterations retired before (their Retired handles end here); device work of theirs
  // that faulted fails the run instead.
  if (release_retired(retired_iter)) return -1;
  // Retiring after the device work: work of this one that faulted fails the run instead.
  if (retire_after_device_ && fail_on_device_fault(retired_iter)) return -1;
  const std::exception_ptr error = iteration_error(retired_iter, sync_[oldest_entry_]);
  try {
    front_.retire(retired_iter, oldest_entry_, error);  // its slot (see entry_after)
  } catch (...) {
    // Its callback had it: the abort that follows does not report it again.
    count_retired();
    fail_callback(error ? CallbackError::Callback::on_failure : CallbackError::Callback::on_retire,
                  retired_iter);
    return -1;
  }
  count_retired();
  release_->advance();
  return retired_iter;
}

void EngineCore::throw_blocking(const char* call) const {
  throw PipelineStateError(
      std::string(call) +
      " called on a thread running the io_context the pipeline's lanes run on, while it would "
      "have to wait for them (iterations " +
      std::to_string(oldest_) + ".." + std::to_string(next_admit_ - 1) +
      " in flight, or a source with nothing yet): blocking there stalls the handlers it waits "
      "for. Use co_await pipe.next() or swp::async_progress(pipe, token) on that thread, or "
      "call it from a thread outside the io_context");
}

std::optional<std::int64_t> EngineCore::progress() {
  if (!filled_) throw PipelineStateError("progress() called before fill_pipeline()");
  refuse_blocking("progress()", !at_end());
  return retire_next();
}

std::int64_t EngineCore::retire_all() {
  if (!filled_) throw PipelineStateError("run() called before fill_pipeline()");
  // The thread's answers hold for the whole call: it stays outside (or inside) the runnable
  // it was called from, whatever runs meanwhile. So each is asked once, not per iteration,
  // and the iterations that need no driving retire in one loop (retire_undriven_while_ready):
  // no call through progress() and its layers, no virtual question and no retire_next call
  // per iteration (one thread: data-flow 201 -> 181 instructions per task, the clock 228 ->
  // 209; docs/benchmarks.md).
  refuse_blocking("run()", !at_end());
  const bool runs_no_work = run_queue_.runs_no_work_here();
  std::int64_t retired = 0;
  for (;;) {
    if (runs_no_work) retired += retire_undriven_while_ready();
    if (!retire_next()) return retired;  // what the loop could not retire, the general way
    ++retired;
  }
}

// Marks the calling thread as the one waiting in retire_next (see waiting_thread_), and
// whether it runs none of the scheduler's work (see waiter_runs_no_work_).
class EngineCore::WaitingThread {
 public:
  explicit WaitingThread(EngineCore& core, bool runs_no_work_here = false) : core_(core) {
    core_.waiting_thread_.store(&this_thread_marker, std::memory_order_relaxed);
    core_.waiter_runs_no_work_ = runs_no_work_here;
  }
  ~WaitingThread() {
    core_.waiting_thread_.store(nullptr, std::memory_order_relaxed);
    core_.waiter_runs_no_work_ = false;
  }
  WaitingThread(const WaitingThread&) = delete;
  WaitingThread& operator=(const WaitingThread&) = delete;

 private:
  EngineCore& core_;
};

// Inline into its two callers in this file (once per iteration).
[[gnu::always_inline]] inline bool EngineCore::retires_at_once() const noexcept {
  return !begin_pending_ && !stop_.stop_requested() && !device_holds_oldest();
}

std::int64_t EngineCore::retire_undriven_while_ready() {
  // retire_next's undriven retirement, one after the other on one waiting scope while each
  // next one is complete: with one thread every one is (each retirement admits and runs the
  // next), which saves retire_next's call and scope per iteration. A retirement that fails
  // leaves the run failed: the retire_next after this surfaces it.
  const WaitingThread waiting(*this, true);
  std::int64_t retired = 0;
  while (retirable() && retires_undriven_ && retires_at_once() && retire_oldest() >= 0) ++retired;
  return retired;
}

std::optional<std::int64_t> EngineCore::retire_next() {
  // The oldest iteration already complete, with a policy that runs what its retirement makes
  // ready where it is released (either engine with one thread): no driving section, nothing
  // to wait for. (Should it wait after all, each wait drives for itself.)
  if (retirable() && retires_undriven_ && run_queue_.runs_no_work_here()) {
    // The common case retires right here (retire_next_driving's loop would retire at once,
    // about 20 instructions per iteration later). A failure on the way surfaces from there.
    if (retires_at_once()) {
      const WaitingThread waiting(*this, true);
      if (const std::int64_t retired_iter = retire_oldest(); retired_iter >= 0)
        return retired_iter;
    }
    return retire_next_driving();
  }
  // One driving stretch for the whole call: the admissions after a retirement post the first
  // tasks of the new iterations to this thread's run queue, where its next waits find them,
  // and the waits claim no queue each.
  std::optional<std::int64_t> retired;
  run_queue_.drive_section([&] { retired = retire_next_driving(); });
  return retired;
}

std::optional<std::int64_t> EngineCore::retire_next_driving() {
  const WaitingThread waiting(*this);
  begin_run();
  // The retire deadline runs while the oldest iteration is in flight (not while the source has
  // nothing: a service may idle for hours), from the first wait of this call that has to look
  // at the clock (DrivenWait::until sets `started`).
  std::optional<Clock::time_point> started;
  for (;;) {
    // A failure met while admitting (the source, a slot deadline) is still to surface, also
    // when nothing is left in flight (drain() relies on it).
    if (stop_.stop_requested()) break;
    if (at_end()) {
      if (!settle_at_end()) break;  // cancelled as it ended: that surfaces
      return std::nullopt;
    }
    // Already retirable (other threads ran it meanwhile): no wait, no scheduler call.
    if (retirable()) {
      if (device_holds_oldest() && !wait_device(oldest_)) {
        time_out_device_retire();
        break;
      }
      // A failure admitting the next iteration (the source, a slot deadline) surfaces from
      // the next call: this one returns what it retired.
      if (const std::int64_t retired_iter = retire_oldest(); retired_iter >= 0) return retired_iter;
      break;
    }
    if (admissible()) {
      release_->advance();
      continue;
    }
    if (starving()) {
      if (!driven_.until_ever(source_or_stop_)) starve_timeout();
      continue;
    }
    if (!driven_.until(oldest_done_, timeouts_.retire, started) && !stop_.stop_requested() &&
        !admissible())
      time_out_retire();
  }
  stop_source();
  release_->release_rest();
  abort_run(wait_drained());
}

void EngineCore::starve_timeout() {
  fail("", next_admit_,
       std::make_exception_ptr(
           hang_report().error("the source has no batch for iteration " +
                               std::to_string(next_admit_) +
                               " and nothing left to run can give it one (nothing left to run: "
                               "deadlock)")),
       FailureKind::timeout);
}

Co<std::optional<std::int64_t>> EngineCore::next(const StopSignal* abandon) {
  if (!filled_) throw PipelineStateError("next() called before fill_pipeline()");
  // Virtual time advances only while someone drives the sim scheduler, and a pool without
  // workers runs only while someone drives it: progress() does, on the awaiting thread (a
  // parked wait would never be run).
  if (runtime_.scheduler().runs_only_when_driven()) {
    if (abandon != nullptr && abandon->stop_requested()) throw Cancelled(abandon->reason());
    co_return retire_next();
  }
  begin_run();
  std::optional<Clock::time_point> started;
  for (;;) {
    if (stop_.stop_requested()) break;
    // Abandoned: this call ends with nothing retired, between two steps of the run (nothing
    // half done), and the next call goes on from here. Checked before a retirement too: a
    // caller that gave up (Asio's `||`) would drop the iteration it returned.
    if (abandon != nullptr && abandon->stop_requested()) throw Cancelled(abandon->reason());
    if (at_end()) {
      if (!settle_at_end()) break;  // cancelled as it ended: that surfaces
      co_return std::nullopt;
    }
    if (retire_ready()) {
      if (const std::int64_t retired_iter = retire_oldest(); retired_iter >= 0)
        co_return retired_iter;
      break;
    }
    if (admissible()) {
      release_->advance();
      continue;
    }
    if (starving()) {
      co_await parked<&EngineCore::source_or_stop>(std::chrono::milliseconds::max(), abandon);
      continue;
    }
    if (co_await parked<&EngineCore::retire_or_admit>(driven_.time_left(timeouts_.retire, started),
                                                  abandon, true) ||
        stop_.stop_requested() || admissible() ||
        (abandon != nullptr && abandon->stop_requested()))
      continue;
    if (!retirable()) {
      time_out_retire();
    } else if (device_holds_oldest()) {
      time_out_device_retire();
    } else {
      time_out_slot(oldest_ + static_cast<std::int64_t>(depth_));
    }
  }
  stop_source();
  release_->release_rest();
  abort_run(co_await parked<&EngineCore::drained>(timeouts_.drain));
}

bool EngineCore::settle_at_end() {
  parked_waits_.stop();  // the run's last wait is over (a failure's drain may arm it again)
  // The last retired iteration is released too (this call ends its handle); device work that
  // faulted fails the run, which surfaces instead of the end.
  if (release_retired(oldest_)) return false;
  // cancel() looks at live_ and fails the run under the same lock: either it failed the run
  // before this look (and the cancel surfaces), or it finds the run ended and returns false.
  std::lock_guard lock(live_mutex_);
  if (failure_.failed()) return false;
  live_.store(false, std::memory_order_release);
  return true;
}

void EngineCore::drain() {
  if (!filled_) return;
  refuse_blocking("drain()", oldest_ < next_admit_);
  end_run();
}

void EngineCore::end_run() {
  // No new batches (one a background wait already received still runs); retire what is in
  // flight. A run never started calls no source: its first admission finds the end.
  stop_source();
  while (retire_next()) {
  }
  // Device work of the iterations retired last that faulted fails the run, which surfaces
  // here (retire_next drains and throws it).
  if (release_retired(oldest_)) (void)retire_next();
  claims_.end_all();  // every iteration retired: no instance holds its lane
  filled_ = false;
  live_.store(false, std::memory_order_release);
  // The push form's queue is handed back (a drained run takes no new batches).
  try {
    front_.run_ended(std::make_exception_ptr(
        Cancelled("batch not admitted: the pipeline was drained before it")));
  } catch (...) {
    throw CallbackError(CallbackError::Callback::on_failure, -1, std::current_exception(),
                        "while handing back the batches drain() did not admit");
  }
}

}  // namespace swp::detail
