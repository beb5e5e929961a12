// RunDriver: progress() (the caller's thread waits and helps), next() (the awaiting coroutine
// suspends), run() and drain(), their deadlines, and the abort after a failure.

#include "swp/engine/detail/run_driver.hpp"

#include <optional>
#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

RunDriver::RunDriver(EngineCore& core)
    : core_(core),
      oldest_done_([&core] {
        return core.retirable() || core.stop_.stop_requested() || core.admissible();
      }),
      source_or_stop_([&core] { return core.source_or_stop(); }),
      driven_(core.runtime().scheduler(), core.timeouts_,
              [&core] {
                if (core.sequencer_.check_timeouts(core.timeouts_.sequencer) > 0)
                  core.runtime().scheduler().notify();
              }),
      parked_waits_(core.runtime().timers(), [&core] {
        core.sequencer_.check_timeouts(core.timeouts_.sequencer);
        core.runtime().scheduler().notify();
      }) {}

template <bool (EngineCore::*Ready)() const noexcept>
ParkedWait RunDriver::parked(std::chrono::milliseconds limit, const StopSignal* abandon,
                             bool wake_on_device) {
  const ParkedWait::Condition ready{&core_, [](const void* core) noexcept {
                                      return (static_cast<const EngineCore*>(core)->*Ready)();
                                    }};
  ParkedWait::ExtraWakeups device;
  // Once the oldest iteration retired, its device work decides whether its slot can take the
  // next batch: its events wake the wait too.
  if (wake_on_device)
    device = {&core_,
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
  return ParkedWait(core_.runtime().scheduler(), parked_waits_, ready, limit,
                    core_.timeouts_.check_interval, abandon, device);
}

bool RunDriver::wait_drained() {
  return driven_.until([this] { return core_.drained(); }, core_.timeouts_.drain);
}

void RunDriver::time_out_retire() {
  EngineCore& c = core_;
  // On virtual time a wait ends unfinished only when nothing is left to run (DrivenWait).
  const bool stuck = c.runtime().scheduler().virtual_time();
  const std::string what =
      "iteration " + std::to_string(c.oldest_) +
      (stuck ? " can never retire (nothing left to run: deadlock); unfinished:"
             : " did not retire within " + std::to_string(c.timeouts_.retire.count()) +
                   " ms; unfinished:");
  const HangReport report = c.hang_report();
  c.fail("", c.oldest_, std::make_exception_ptr(report.error(what + report.unfinished())),
         FailureKind::timeout);
}

void RunDriver::starve_timeout() {
  EngineCore& c = core_;
  c.fail("", c.next_admit_,
         std::make_exception_ptr(
             c.hang_report().error("the source has no batch for iteration " +
                                   std::to_string(c.next_admit_) +
                                   " and nothing left to run can give it one (nothing left to "
                                   "run: deadlock)")),
         FailureKind::timeout);
}

void RunDriver::time_out_source() {
  EngineCore& c = core_;
  const bool stuck = c.runtime().scheduler().virtual_time();
  const HangReport report = c.hang_report();
  c.fail("", c.next_admit_,
         std::make_exception_ptr(report.error(
             "the source's fetch of the batch for iteration " + std::to_string(c.next_admit_) +
             " was cancelled as the run ended and " +
             (stuck ? std::string("can never return (nothing left to run: deadlock)")
                    : "did not return within " + std::to_string(c.timeouts_.drain.count()) +
                          " ms (the drain deadline): it awaits something that ignores "
                          "cancellation") +
             "; unfinished:" + report.unfinished())),
         FailureKind::timeout);
}

Co<std::optional<std::int64_t>> RunDriver::next(std::stop_token token) {
  // Registered for the wait only; it runs at once if the token stopped already.
  std::stop_callback on_stop(token, [this] { core_.cancel("stop requested"); });
  co_return co_await next();
}

void RunDriver::abort_run(bool drained) {
  EngineCore& c = core_;
  // Everything released must have finished before state can be reset: cancellable waits were
  // woken by fail(); bodies run to their end.
  const Failure failure = c.failure_.snapshot();
  parked_waits_.stop();
  c.filled_ = false;
  c.live_.store(false, std::memory_order_release);
  if (!drained) {
    c.broken_ = true;
    // Bodies still run in the contexts of the iterations in flight: none can be handed to
    // on_failure. The batches never admitted are in no context: they go back now, and the
    // push form's queue closes (left open, it took batches into a dead run, and every later
    // fill_submissions() failed to reopen it).
    std::string handing_back;
    try {
      c.front_.run_ended(std::make_exception_ptr(Cancelled(
          "batch not admitted: the run failed and could not drain: " + failure.describe())));
    } catch (const std::exception& e) {
      handing_back = std::string("; on_failure threw while the batches not admitted were "
                                 "handed back: ") + e.what();
    } catch (...) {
      handing_back = "; on_failure threw while the batches not admitted were handed back";
    }
    // The failure that started the drain is the cause: it stays in the message.
    const HangReport report = c.hang_report();
    const std::string in_flight = c.oldest_ < c.next_admit_
                                      ? "iterations " + std::to_string(c.oldest_) + ".." +
                                            std::to_string(c.next_admit_ - 1) +
                                            " did not retire and were not reported"
                                      : std::string("no iteration was in flight");
    throw report.error("pipeline could not drain after a failure (" + failure.describe() + "); " +
                       in_flight + handing_back + "; still unfinished:" + report.unfinished());
  }
  c.claims_.end_all();  // drained: no instance holds its lane
  // Every iteration in flight is accounted for (FailurePolicy): failed or cancelled.
  std::exception_ptr report_error;  // what the first throwing on_failure threw
  std::int64_t report_iter = -1;
  for (; c.oldest_ < c.next_admit_; c.count_retired()) {
    try {
      c.front_.retire(c.oldest_, c.oldest_entry_, abandoned_error(failure, c.oldest_));
    } catch (...) {
      if (!report_error) {
        report_error = std::current_exception();
        report_iter = c.oldest_;
      }
    }
  }
  c.release_retired(c.next_admit_);
  // Then the batches taken but never admitted (the push form's queue, a fetched batch).
  try {
    c.front_.run_ended(failure.kind == FailureKind::cancelled
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

std::exception_ptr RunDriver::abandoned_error(const Failure& failure, std::int64_t iter) const {
  if (auto own = core_.iteration_error(iter)) return own;  // skip: it had failed before the run did
  if (iter == failure.iter) {
    return failure.run_error();  // a task's, a deadline's or a callback's in this iteration
  }
  if (failure.kind == FailureKind::cancelled) return failure.error;
  return std::make_exception_ptr(Cancelled("iteration " + std::to_string(iter) +
                                           " cancelled: the run failed: " + failure.describe()));
}

void RunDriver::refuse_blocking(const char* call, bool would_wait) const {
  if (would_wait && core_.runtime().scheduler().must_not_block_here()) [[unlikely]]
    throw_blocking(call);
}

void RunDriver::throw_blocking(const char* call) const {
  throw PipelineStateError(
      std::string(call) +
      " called on a thread running the io_context the pipeline's lanes run on, while it would "
      "have to wait for them (iterations " +
      std::to_string(core_.oldest_) + ".." + std::to_string(core_.next_admit_ - 1) +
      " in flight, or a source with nothing yet): blocking there stalls the handlers it waits "
      "for. Use co_await pipe.next() or swp::async_progress(pipe, token) on that thread, or "
      "call it from a thread outside the io_context");
}

// One public call drives the run at a time: set for the call's length (next()'s suspensions
// included), and any other call meanwhile is refused before it touches the run.
class RunDriver::Driving {
 public:
  Driving(RunDriver& driver, const char* call) : driver_(driver) { driver.begin_driving(call); }
  ~Driving() { driver_.end_driving(); }
  Driving(const Driving&) = delete;
  Driving& operator=(const Driving&) = delete;

 private:
  RunDriver& driver_;
};

void RunDriver::begin_driving(const char* call) {
  // One read-modify-write per call (not per iteration of run()): two threads cannot both pass.
  const char* driving = nullptr;
  if (!driving_.compare_exchange_strong(driving, call, std::memory_order_acquire,
                                        std::memory_order_relaxed)) [[unlikely]]
    throw_reentered(call, driving);
}

void RunDriver::throw_reentered(const char* call, const char* driving) {
  throw PipelineStateError(
      std::string(call) + " called while " + driving +
      " of the same pipeline runs (from its on_retire, on_failure, source or a task body, or "
      "from another thread): one call drives a pipeline at a time (from on_retire, a second "
      "one would retire the same iteration again). To end the run from there, call cancel(), "
      "or let the source end");
}

void RunDriver::refuse_while_driving(const char* call) const {
  if (const char* driving = driving_.load(std::memory_order_relaxed); driving != nullptr)
    throw_reentered(call, driving);
}

std::optional<std::int64_t> RunDriver::progress() {
  const Driving driving(*this, "progress()");
  if (!core_.filled_) throw PipelineStateError("progress() called before fill_pipeline()");
  refuse_blocking("progress()", !core_.at_end());
  return retire_next();
}

std::int64_t RunDriver::retire_all() {
  const Driving driving(*this, "run()");
  if (!core_.filled_) throw PipelineStateError("run() called before fill_pipeline()");
  // The thread's answers hold for the whole call: it stays outside (or inside) the runnable
  // it was called from, whatever runs meanwhile. So each is asked once, not per iteration,
  // and the iterations that need no driving retire in one loop (retire_undriven_while_ready):
  // no call through progress() and its layers, no virtual question and no retire_next call
  // per iteration (one thread: data-flow 201 -> 181 instructions per task, the clock 228 ->
  // 209; docs/benchmarks.md).
  refuse_blocking("run()", !core_.at_end());
  const bool runs_no_work = core_.run_queue_.runs_no_work_here();
  EngineCore& c = core_;
  // Where the next retirement needs no driving section (retire_next's first case).
  const auto undriven_next = [&] { return runs_no_work && c.retires_undriven_ && c.retirable(); };
  std::int64_t retired = 0;
  for (;;) {
    if (runs_no_work) retired += retire_undriven_while_ready();
    if (undriven_next()) {
      if (!retire_next()) return retired;  // what the loop could not retire, the general way
      ++retired;
      continue;
    }
    // The general way (retire_next's driving stretch), retirement after retirement in one
    // driving section for as long as the next needs one: this thread claims its driver queue
    // once per stretch, not once per iteration (with workers, every iteration).
    bool ended = false;
    c.run_queue_.drive_section([&] {
      do {
        if (!retire_next_driving()) {
          ended = true;
          return;
        }
        ++retired;
      } while (!undriven_next());
    });
    if (ended) return retired;
  }
}

// Marks the calling thread as the one waiting in retire_next (see EngineCore::waiting_thread_),
// and whether it runs none of the scheduler's work (see EngineCore::waiter_runs_no_work_).
class RunDriver::WaitingThread {
 public:
  // `advance_may_retire`: see EngineCore::advance_may_retire_ (run()'s undriven loop only).
  explicit WaitingThread(EngineCore& core, bool runs_no_work_here = false,
                         bool advance_may_retire = false)
      : core_(core) {
    core_.waiting_thread_.store(&this_thread_marker, std::memory_order_relaxed);
    core_.waiter_runs_no_work_ = runs_no_work_here;
    core_.advance_may_retire_ = advance_may_retire;
  }
  ~WaitingThread() {
    core_.waiting_thread_.store(nullptr, std::memory_order_relaxed);
    core_.waiter_runs_no_work_ = false;
    core_.advance_may_retire_ = false;
  }
  WaitingThread(const WaitingThread&) = delete;
  WaitingThread& operator=(const WaitingThread&) = delete;

 private:
  EngineCore& core_;
};

// Inline where it is asked (once per retirement). No look at the stop signal: a run stops
// only once its failure is recorded (EngineCore::fail, fail_on_device_fault), and
// retire_oldest_only, which its callers call next, retires nothing then. Static, given the
// core: the loops keep it in a register (through this->core_, each look reloaded it after
// every call).
[[gnu::always_inline]] inline bool RunDriver::retires_at_once(const EngineCore& c) noexcept {
  return !c.begin_pending_ && !c.device_holds_oldest();
}

[[gnu::always_inline]] inline bool RunDriver::retires_next_undriven(const EngineCore& c) noexcept {
  return c.retirable() && c.retires_undriven_ && retires_at_once(c);
}

[[gnu::always_inline]] inline void RunDriver::admit_unless_retirable() {
  // Undriven, nothing runs until this thread admits: an iteration complete now stays so, and
  // retires first (the next call's), and one admission's setup serves every slot they free.
  // With one thread, data-flow runs each admitted iteration whole, so every iteration in
  // flight is complete: one advance() per `depth` retirements instead of one per retirement
  // (docs/benchmarks.md). The admission still follows the retirement that freed its slot.
  if (!retires_next_undriven(core_)) core_.release_->advance();
}

std::int64_t RunDriver::retire_undriven_while_ready() {
  // retire_next's undriven retirement, one after the other on one waiting scope while each
  // next one is complete, which saves retire_next's call and scope per iteration. A
  // retirement that fails leaves the run failed: the retire_next after this surfaces it.
  EngineCore& c = core_;
  // The policy's advance() may retire too (see EngineCore::advance_may_retire_), so the
  // retirements are counted by the oldest iteration (one whose callback failed counts too: the
  // run surfaces that failure from the retire_next after this call).
  const WaitingThread waiting(c, true, true);
  const std::int64_t first = c.oldest_;
  // Each retirement followed by admit_unless_retirable, with one look at the next iteration
  // per retirement and one per admission.
  while (retires_next_undriven(c)) {
    do {
      if (!c.retire_oldest_only()) return c.oldest_ - first;
    } while (retires_next_undriven(c));
    c.release_->advance();
  }
  return c.oldest_ - first;
}

std::optional<std::int64_t> RunDriver::retire_next() {
  EngineCore& c = core_;
  // The oldest iteration already complete, with a policy that runs what its retirement makes
  // ready where it is released (either engine with one thread): no driving section, nothing
  // to wait for. (Should it wait after all, each wait drives for itself.)
  if (c.retirable() && c.retires_undriven_ && c.run_queue_.runs_no_work_here()) {
    // The common case retires right here (retire_next_driving's loop would retire at once,
    // about 20 instructions per iteration later). A failure on the way surfaces from there.
    if (retires_at_once(c)) {
      const WaitingThread waiting(c, true);
      if (const std::int64_t retired_iter = c.oldest_; c.retire_oldest_only()) {
        admit_unless_retirable();
        return retired_iter;
      }
    }
    return retire_next_driving();
  }
  // One driving stretch for the whole call: the admissions after a retirement post the first
  // tasks of the new iterations to this thread's run queue, where its next waits find them,
  // and the waits claim no queue each.
  std::optional<std::int64_t> retired;
  c.run_queue_.drive_section([&] { retired = retire_next_driving(); });
  return retired;
}

std::optional<std::int64_t> RunDriver::retire_next_driving() {
  EngineCore& c = core_;
  const WaitingThread waiting(c);
  c.begin_run();
  // The retire deadline runs while the oldest iteration is in flight (not while the source has
  // nothing: a service may idle for hours), from the first wait of this call that has to look
  // at the clock (DrivenWait::until sets `started`).
  std::optional<Clock::time_point> started;
  // The wait for a cancelled fetch had the drain deadline already: the drain after its
  // failure does not wait for it again.
  bool fetch_waited = false;
  for (;;) {
    // A failure met while admitting (the source, a slot deadline) is still to surface, also
    // when nothing is left in flight (drain() relies on it).
    if (c.stop_.stop_requested()) break;
    if (c.at_end()) {
      if (!settle_at_end()) break;  // cancelled as it ended: that surfaces
      return std::nullopt;
    }
    // Already retirable (other threads ran it meanwhile): no wait, no scheduler call.
    if (c.retirable()) {
      if (c.device_holds_oldest() && !c.wait_device(c.oldest_)) {
        c.time_out_device_retire();
        break;
      }
      // A failure admitting the next iteration (the source, a slot deadline) surfaces from
      // the next call: this one returns what it retired.
      if (const std::int64_t retired_iter = c.retire_oldest(); retired_iter >= 0)
        return retired_iter;
      break;
    }
    if (c.admissible()) {
      c.release_->advance();
      continue;
    }
    if (c.starving()) {
      if (c.source_stopped_) {
        // The run ends (drain(), the teardown) and cancelled the fetch; one whose await
        // ignores cancellation is waited for up to the drain deadline, as a body is.
        if (!driven_.until(source_or_stop_, c.timeouts_.drain)) {
          time_out_source();
          fetch_waited = true;
        }
      } else if (!driven_.until_ever(source_or_stop_)) {
        starve_timeout();
      }
      continue;
    }
    if (!driven_.until(oldest_done_, c.timeouts_.retire, started) && !c.stop_.stop_requested() &&
        !c.admissible())
      time_out_retire();
  }
  c.stop_source();
  c.release_->release_rest();
  abort_run(fetch_waited ? c.drained() : wait_drained());
}

Co<std::optional<std::int64_t>> RunDriver::next(const StopSignal* abandon) {
  const Driving driving(*this, "next()");
  EngineCore& c = core_;
  if (!c.filled_) throw PipelineStateError("next() called before fill_pipeline()");
  // Virtual time advances only while someone drives the sim scheduler, and a pool without
  // workers runs only while someone drives it: progress() does, on the awaiting thread (a
  // parked wait would never be run).
  if (c.runtime().scheduler().runs_only_when_driven()) {
    if (abandon != nullptr && abandon->stop_requested()) throw Cancelled(abandon->reason());
    co_return retire_next();
  }
  c.begin_run();
  std::optional<Clock::time_point> started;
  for (;;) {
    if (c.stop_.stop_requested()) break;
    // Abandoned: this call ends with nothing retired, between two steps of the run (nothing
    // half done), and the next call goes on from here. Checked before a retirement too: a
    // caller that gave up (Asio's `||`) would drop the iteration it returned.
    if (abandon != nullptr && abandon->stop_requested()) throw Cancelled(abandon->reason());
    if (c.at_end()) {
      if (!settle_at_end()) break;  // cancelled as it ended: that surfaces
      co_return std::nullopt;
    }
    if (c.retire_ready()) {
      if (const std::int64_t retired_iter = c.retire_oldest(); retired_iter >= 0)
        co_return retired_iter;
      break;
    }
    if (c.admissible()) {
      c.release_->advance();
      continue;
    }
    if (c.starving()) {
      co_await parked<&EngineCore::source_or_stop>(std::chrono::milliseconds::max(), abandon);
      continue;
    }
    if (co_await parked<&EngineCore::retire_or_admit>(
            driven_.time_left(c.timeouts_.retire, started), abandon, true) ||
        c.stop_.stop_requested() || c.admissible() ||
        (abandon != nullptr && abandon->stop_requested()))
      continue;
    if (!c.retirable()) {
      time_out_retire();
    } else if (c.device_holds_oldest()) {
      c.time_out_device_retire();
    } else {
      c.time_out_slot(c.oldest_ + static_cast<std::int64_t>(c.depth_));
    }
  }
  c.stop_source();
  c.release_->release_rest();
  abort_run(co_await parked<&EngineCore::drained>(c.timeouts_.drain));
}

bool RunDriver::settle_at_end() {
  EngineCore& c = core_;
  parked_waits_.stop();  // the run's last wait is over (a failure's drain may arm it again)
  // The last retired iteration is released too (this call ends its handle); device work that
  // faulted fails the run, which surfaces instead of the end.
  if (c.release_retired(c.oldest_)) return false;
  // cancel() looks at live_ and fails the run under the same lock: either it failed the run
  // before this look (and the cancel surfaces), or it finds the run ended and returns false.
  std::lock_guard lock(c.live_mutex_);
  if (c.failure_.failed()) return false;
  c.live_.store(false, std::memory_order_release);
  return true;
}

void RunDriver::drain() {
  const Driving driving(*this, "drain()");
  if (!core_.filled_) return;
  refuse_blocking("drain()", core_.oldest_ < core_.next_admit_);
  end_run();
}

void RunDriver::end_run() {
  EngineCore& c = core_;
  // No new batches (one a background wait already received still runs); retire what is in
  // flight. A run never started calls no source: its first admission finds the end.
  c.stop_source();
  while (retire_next()) {
  }
  // Device work of the iterations retired last that faulted fails the run, which surfaces
  // here (retire_next drains and throws it).
  if (c.release_retired(c.oldest_)) (void)retire_next();
  c.claims_.end_all();  // every iteration retired: no instance holds its lane
  c.filled_ = false;
  c.live_.store(false, std::memory_order_release);
  // The push form's queue is handed back (a drained run takes no new batches).
  try {
    c.front_.run_ended(std::make_exception_ptr(
        Cancelled("batch not admitted: the pipeline was drained before it")));
  } catch (...) {
    throw CallbackError(CallbackError::Callback::on_failure, -1, std::current_exception(),
                        "while handing back the batches drain() did not admit");
  }
}

}  // namespace swp::detail
