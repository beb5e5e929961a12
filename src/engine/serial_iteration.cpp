// The serial runs: one iteration's tasks in topological order on the calling thread
// (run_serial_iteration), after the wait for the device work of the serial iteration before
// it (await_serial_slot) and, with retire_after_device, before it retires, for its own,
// between begin_serial_run and end_serial_run.

#include "swp/engine/detail/serial_iteration.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "swp/async/detail/erased_co.hpp"
#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

// The steps of run_serial_iteration that reach into the core (a friend).
struct SerialSteps {
  static void await_slot(EngineCore& c, std::int64_t iter);
  static void await_device_work(EngineCore& c, std::int64_t iter, std::string_view cannot);
  static void throw_device_error(EngineCore& c, std::int64_t iter, std::uint64_t serial);
  static void time_out(EngineCore& c, TaskIndex t, std::int64_t iter);
  static std::exception_ptr drive_body(EngineCore& c, Instance& in, TaskIndex t, std::int64_t iter,
                                       ErasedCo& body, std::optional<Clock::time_point>& started);
};

// See await_serial_slot.
void SerialSteps::await_slot(EngineCore& c, std::int64_t iter) {
  // Cancelled (or failed) before it: nothing of it runs.
  if (c.failure_.failed()) std::rethrow_exception(c.failure_.snapshot().run_error());
  await_device_work(c, iter,
                    "start (it reuses their context slot, which that work may still read)");
}

// Waits (retire deadline, ended by the serial run's stop) for the device work the serial
// iterations queued on "default". Past the deadline it fails the serial run (on_run_failed
// told) with the PipelineTimeout ending "so serial iteration <iter> cannot <cannot>"; then, or
// when stopped (cancel(), another failure), it throws the serial run's error. Nothing is
// forgotten when it throws: the work is waited for again next time.
void SerialSteps::await_device_work(EngineCore& c, std::int64_t iter, std::string_view cannot) {
  if (c.await_serial_device_work(&c.stop_)) return;
  // Stopped (cancel(), another failure): that failure is the serial run's.
  if (!c.stop_.stop_requested())
    c.fail("", iter,
           std::make_exception_ptr(c.serial_device_timeout(
               "so serial iteration " + std::to_string(iter) + " cannot " + std::string(cannot))),
           FailureKind::timeout);
  std::rethrow_exception(c.failure_.snapshot().run_error());
}

// With retire_after_device, once serial iteration `iter`'s device work on "default" completed:
// what a pipelined iteration's retirement looks at (fail_on_device_fault) — a callable a task of
// it queued that threw (HostWorkErrors, kept under this iteration, that task and `serial`, this
// serial iteration's stamp), else a fault the stream reported for the event the wait recorded —
// is thrown as that task's TaskError, as a throwing body's is (the iteration does not retire;
// on_run_failed is not told). A callable's error is taken (a later synchronize() or
// run_serial's end does not report it again); the first one in serial order wins, since
// callables on a faulted stream no longer run. The stamp keeps an error an earlier serial
// iteration of the same number left unreported (retire_after_device off then) from being
// charged to this one: it stays for synchronize() or run_serial's end. Where taking an error
// fails (its lock), that failure is the task's error, as in fail_on_recorded_fault. One event
// covers the whole serial iteration, so a fault names the first task that queued work on
// "default". Nothing of this iteration on "default": nothing to look at (a fault stays for
// synchronize()).
void SerialSteps::throw_device_error(EngineCore& c, std::int64_t iter, std::uint64_t serial) {
  const bool thrown = !c.host_work_errors_->empty();
  std::exception_ptr fault = c.serial_device_fault();
  if (!thrown && !fault) return;
  IterationSync& sync = c.sync_[0];
  const auto fail = [&](TaskIndex t, std::exception_ptr error) {
    Instance& in = sync.instances[t];
    in.failed = true;
    in.error() = error;
    throw TaskError(c.graph_.name(t), iter, std::move(error));
  };
  if (thrown)
    for (TaskIndex t : c.tasks_.serial_order()) {
      if (!sync.instances[t].stream_used) continue;
      std::exception_ptr error;
      try {
        error = c.host_work_errors_->take(iter, t, serial);
      } catch (...) {
        error = std::current_exception();  // the lock failed: the iteration fails with that
      }
      if (error) fail(t, std::move(error));
    }
  if (fault)
    for (TaskIndex t : c.tasks_.serial_order())
      if (sync.instances[t].stream_used) fail(t, fault);
}

// Fails the serial run: task `t` of iteration `iter` did not finish within the retire deadline
// (on virtual time: it never can).
void SerialSteps::time_out(EngineCore& c, TaskIndex t, std::int64_t iter) {
  const HangReport report = c.hang_report();
  const std::exception_ptr timeout = std::make_exception_ptr(
      c.runtime_.scheduler().virtual_time()
          ? report.error("serial iteration " + std::to_string(iter) + ": task '" +
                         c.graph_.name(t) +
                         "' can never finish (it waits for something no task will provide)")
          : report.error("serial iteration " + std::to_string(iter) + " did not finish within " +
                         std::to_string(c.timeouts_.retire.count()) +
                         " ms; unfinished:" + report.serial_unfinished(t, iter)));
  c.fail("", iter, timeout, FailureKind::timeout);
}

// Runs `body` (task t's, not started) to its end on this thread, driving the scheduler while
// it awaits, with the run's stop and deadlines (see run_serial_iteration): its error, or
// nullptr. `started`: when the iteration's first wait began (its retire deadline's start).
std::exception_ptr SerialSteps::drive_body(EngineCore& c, Instance& in, TaskIndex t,
                                           std::int64_t iter, ErasedCo& body,
                                           std::optional<Clock::time_point>& started) {
  auto outcome = std::make_shared<SerialOutcome>();
  outcome->scheduler = &c.runtime_.scheduler();
  // The completion's own reference, freed by it: the outcome outlives this call when the body
  // does (ignoring cancellation).
  auto* held = new std::shared_ptr<SerialOutcome>(outcome);
  body.start_detached(
      nullptr,
      [](void* context, std::exception_ptr& error) noexcept {
        const std::unique_ptr<std::shared_ptr<SerialOutcome>> mine(
            static_cast<std::shared_ptr<SerialOutcome>*>(context));
        SerialOutcome& o = **mine;
        o.error = std::move(error);
        Scheduler* to_notify = o.scheduler;
        o.ended.store(true, std::memory_order_seq_cst);
        to_notify->notify();
      },
      held, &c.stop_, &in);
  const auto ended = [&o = *outcome] { return o.ended.load(std::memory_order_seq_cst); };
  if (!ended()) {
    // The body's awaits complete on other threads (host) or on this one as it drives.
    DrivenWait& wait = c.driver_.driven();
    const auto ended_or_stop = [&] { return ended() || c.stop_.stop_requested(); };
    if (!wait.until(ended_or_stop, c.timeouts_.retire, started) && !c.stop_.stop_requested())
      time_out(c, t, iter);
    // Stopped (the deadline, cancel()): its cancellable awaits wake with Cancelled.
    if (!ended() && !wait.until(ended, c.timeouts_.drain)) {
      c.broken_ = true;
      c.serial_straggler_ = outcome;
      const HangReport report = c.hang_report();
      throw report.error("serial iteration " + std::to_string(iter) +
                         " could not end after its failure (" + c.failure_.snapshot().describe() +
                         "): task '" + c.graph_.name(t) +
                         "' ignored cancellation and did not return within " +
                         std::to_string(c.timeouts_.drain.count()) +
                         " ms; the pipeline is broken until it returns; still unfinished:" +
                         report.serial_unfinished(t, iter));
    }
  }
  return std::move(outcome->error);
}

void begin_serial_run(EngineCore& c, const char* call) {
  c.driver_.refuse_while_driving(call);
  c.require_whole(call);
  if (c.filled_) {
    // A run that ended (its source and every iteration) ends for good: serial iterations
    // reuse its first slot and entry, so it could not go on after them.
    c.require_between_runs(call);
    c.driver_.end_run();
  }
  c.settle_device_work();
  c.release_retired(c.oldest_);  // none holds device work now: each is released
  c.driver_.begin_driving(call);
  // Live: cancel() may end it, under the lock it takes (see EngineCore::live_).
  std::lock_guard lock(c.live_mutex_);
  c.failure_.reset();
  c.stop_.reset();
  c.live_.store(true, std::memory_order_release);
}

void end_serial_run(EngineCore& c) noexcept {
  {
    std::lock_guard lock(c.live_mutex_);
    c.live_.store(false, std::memory_order_release);
  }
  c.driver_.end_driving();
}

void await_serial_slot(EngineCore& c, std::int64_t iter) { SerialSteps::await_slot(c, iter); }

void run_serial_iteration(EngineCore& c, std::int64_t iter) {
  // Cancelled (or failed) before it: nothing of it runs.
  if (c.failure_.failed()) std::rethrow_exception(c.failure_.snapshot().run_error());
  Stream& stream = c.runtime_.stream("default");
  IterationSync& sync = c.sync_[0];
  // Numbers are never reused: the next run (or run_serial's next iteration) numbers after it.
  // Nothing is in flight (oldest_ = next_admit_: no iteration for drained() or a hang report
  // to look at), and every retired iteration was released (begin_serial_run).
  if (iter >= c.next_admit_ && iter < INT64_MAX) {
    c.next_admit_ = c.oldest_ = c.released_upto_ = iter + 1;
    c.admit_entry_ = c.oldest_entry_ = c.released_entry_ = c.sync_ring_(iter + 1);
  }
  for (TaskIndex t : c.slots_[0].boxed) c.slots_[0].boxes[t]->reset();
  sync.iter = iter;
  sync.slot = &c.slots_[0];
  sync.serial_stream = &stream;
  for (Instance& in : sync.instances) {
    in.stream_used = false;
    in.carries_device_work = false;
    in.failed = false;
    in.error() = nullptr;
    in.set_state(InstanceState::idle);
  }
  std::optional<Clock::time_point> started;  // the iteration's deadline, from its first wait
  // What its tasks' callables throw is stamped with this serial iteration (HostWorkErrors),
  // until it ends however it ends.
  struct SerialStamp {
    HostWorkErrors& errors;
    const std::uint64_t serial = errors.begin_serial();
    ~SerialStamp() { errors.end_serial(); }
  } const stamp{*c.host_work_errors_};
  for (TaskIndex t : c.tasks_.serial_order()) {
    if (c.failure_.failed()) std::rethrow_exception(c.failure_.snapshot().run_error());
    Instance& in = sync.instances[t];
    // Observed like a pipelined instance: released, started and finished, in serial order.
    c.hooks_.released(in, *c.tasks_[t].lane, [] {});
    in.set_state(InstanceState::running);
    c.hooks_.started(in, true);
    std::exception_ptr error;
    ErasedCo body;
    try {
      if (c.tasks_[t].routine != nullptr)
        body = ErasedCo(c.tasks_[t].routine->run(c.slots_[0].context, in.scope(), c.box(0, t)));
    } catch (...) {
      error = std::current_exception();
    }
    // Bodies awaiting virtual CPU time on sim need the scheduler driven; on host they run on,
    // or finish on another thread.
    if (body.valid()) error = SerialSteps::drive_body(c, in, t, iter, body, started);
    in.set_state(InstanceState::finished);
    // Its device work on "default" is waited for before the next serial iteration
    // (await_serial_slot) or run (check_fillable) reuses slot 0, not here: the serial
    // iteration returns once its bodies returned (with retire_after_device, below).
    if (in.stream_used) c.serial_device_work_ = true;
    const bool failed = error != nullptr || c.failure_.failed();
    if (error) {
      in.failed = true;
      in.error() = error;
    }
    c.hooks_.finished(in, !failed);
    // The serial run's failure (a deadline, cancel()) first: the body's Cancelled is its effect.
    if (c.failure_.failed()) std::rethrow_exception(c.failure_.snapshot().run_error());
    if (error) throw TaskError(c.graph_.name(t), iter, error);
  }
  // retire_after_device: the front end's on_retire reads slot 0 right after this returns, so
  // what the device writes into the context (a host stream's work, a device-to-host copy)
  // must be there, and work that failed to write it fails the iteration instead, as in a
  // pipelined run. Off, one flag test: the serial iteration returns under its device work.
  if (c.retire_after_device_) {
    SerialSteps::await_device_work(
        c, iter, "retire (retire_after_device: the results it writes may not be there yet)");
    SerialSteps::throw_device_error(c, iter, stamp.serial);
  }
}

}  // namespace swp::detail
