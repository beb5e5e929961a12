#pragma once
// run_serial_iteration: one iteration of a pipeline's plan run serially on the calling thread
// (with retire_after_device, until its device work completed, failing where that failed), and
// await_serial_slot, the wait before its context is written into slot 0, for run_serial and
// run_one_serial_iter (not for direct use).

#include <atomic>
#include <cstdint>
#include <exception>

namespace swp {
class Scheduler;
}

namespace swp::detail {

class EngineCore;

/// What a serial body's completion writes, on whichever thread ends it; shared with it, so a
/// body that ignored cancellation past the drain deadline may still end after the serial
/// iteration gave up on it (the core keeps it until then: EngineCore::drained).
struct SerialOutcome {
  std::atomic<bool> ended{false};
  std::exception_ptr error;
  Scheduler* scheduler = nullptr;  // notified once `ended` is set
};

/// Before the front end writes serial iteration `iter`'s context into slot 0: waits (with the
/// retire deadline) for the device work the serial iterations before it queued on "default"
/// (IterationDeviceWork::await_serial_device_work), which may still read slot 0 — the context
/// and the tasks' buffers there. run_serial_iteration does not wait for its own at its end, so
/// this wait is where back-to-back serial iterations (run_serial, run_one_serial_iter calls,
/// TaskProfiler's rounds) meet: the next one's bodies start once the previous one's device
/// work completed, not under it. Per serial iteration, nothing per task.
///
/// Completion: returns at once where the serial iteration before it used no stream (or its
/// work was waited for already), else once that work completed. Errors: the serial run's
/// failure before it (cancel()'s swp::Cancelled); past the deadline the serial run fails
/// (on_run_failed told) with a PipelineTimeout "device work of serial iterations on stream
/// 'default' did not complete within N ms, so serial iteration `iter` cannot start (...)" (on
/// sim: "can never complete (nothing left to run: deadlock)"). Cancellation: cancel() ends
/// the wait, which throws swp::Cancelled("pipeline cancelled: " + reason). Whenever it throws,
/// slot 0 is unchanged and the work is waited for again by the next serial iteration or run.
/// Must run between begin_serial_run and end_serial_run.
void await_serial_slot(EngineCore& core, std::int64_t iter);

/// Runs iteration `iter` of `core`'s plan, whose context the caller put in context slot 0, on
/// the calling thread: the tasks in EngineCore::serial_order (topological over the intra
/// dependencies, ties by name), each to its end before the next starts, all device work on the
/// "default" stream — the baseline a pipelined run is compared to. The observer and NVTX
/// ranges see each task released, started and finished, as in a pipelined run.
///
/// Completion: returns once every task finished (a body that awaits is driven to its end here,
/// virtual time included); the device work they queued on "default" may still run (the next
/// await_serial_slot, or the next run's fill, waits for it). With retire_after_device it then
/// waits, as await_serial_slot does, until that work completed: the front end calls on_retire
/// with slot 0 right after it returns, and must see what the device wrote there (one flag
/// test per serial iteration when off). Errors: a task's error as TaskError, after which the
/// tasks after it do not run; the serial run's failure (its deadline's PipelineTimeout,
/// cancel()'s swp::Cancelled), once the body it stopped ended; with retire_after_device, that
/// wait's errors as await_serial_slot's, its PipelineTimeout ending "so serial iteration
/// `iter` cannot retire (...)" (on_run_failed told) — the iteration then does not retire (the
/// front end calls no on_retire), and its work is waited for again before slot 0 is reused;
/// once that work completed, a callable one of its tasks queued that threw (HostWorkErrors,
/// taken) or a fault "default" reported for it (serial_device_fault) is thrown as that task's
/// TaskError, as a body's error (not through the serial run's failure: on_run_failed is not
/// told), the fault naming the first task that queued work there — what a pipelined
/// iteration's retirement reports (fail_on_device_fault).
/// Deadlines (EngineTimeouts), as for a run's iteration: `retire` for its tasks, from its
/// first wait (the wait for its device work has a `retire` of its own) — past it (on virtual
/// time: when a body awaits something no task will provide) the serial run fails with a
/// PipelineTimeout naming the task and iteration, and its body's await is cancelled; `drain`
/// for that body to end then: past it the pipeline is broken (as after a run that could not
/// drain) until the body returns. Cancellation: the core's cancel(), from any thread or a
/// body, fails the serial run: the running body's cancellable awaits throw swp::Cancelled, no
/// later task or iteration starts, and Cancelled("pipeline cancelled: " + reason) surfaces —
/// also from the wait for the device work (retire_after_device).
/// Must run between begin_serial_run and end_serial_run.
///
/// Example (what Pipeline::run_one_serial_iter does):
/// `await_serial_slot(core, 7);` then, with the context in slot 0, `run_serial_iteration(core, 7);`
void run_serial_iteration(EngineCore& core, std::int64_t iter);

/// Starts a serial run (run_one_serial_iter, or run_serial for all its iterations), for the
/// front end to call before it writes a context into slot 0: the state checks
/// (PipelineStateError naming `call` while a run is in progress, while another call drives the
/// pipeline — from a callback of its — or while bodies of a broken run still run), the end of a
/// run that ended (whose last releases may still reset slot 0), the device work left on the
/// slots (IterationDeviceWork::settle_device_work). Then the serial run is live — cancel() ends
/// it — and `call` drives the pipeline until end_serial_run (progress(), fill, the setters are
/// refused meanwhile). Nothing changes when it throws.
void begin_serial_run(EngineCore& core, const char* call);
/// Ends what begin_serial_run started.
void end_serial_run(EngineCore& core) noexcept;

}  // namespace swp::detail
