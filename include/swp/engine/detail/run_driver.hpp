#pragma once
// RunDriver: the caller's side of an EngineCore's run — progress(), run(), next(), drain() —
// with its waits' deadlines and the surfacing of a failed run (not for direct use).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stop_token>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/engine/detail/driven_wait.hpp"
#include "swp/engine/detail/parked_wait.hpp"
#include "swp/engine/detail/parked_wait_watch.hpp"
#include "swp/engine/detail/run_failure.hpp"

namespace swp::detail {

class EngineCore;

/// How the caller drives a run: the core admits, runs and retires iterations one at a time
/// (EngineCore::retire_oldest and the release policy's advance); the driver decides when —
/// it waits for the oldest iteration, helping the scheduler meanwhile (progress(), DrivenWait)
/// or suspending the awaiting coroutine (next(), ParkedWait), retires it, and gives up at the
/// deadlines (retire, drain, a source that can never answer on virtual time).
///
/// Completion: progress() and next() return the iteration they retired, or nullopt once the
/// source ended and every iteration retired. Errors: the run's (a task's TaskError, a
/// deadline's, a callback's, Cancelled from cancel()), after the driver drained what was
/// released and handed every iteration in flight to the front end as failed or cancelled
/// (abort: none is dropped); a run that cannot drain throws and leaves the core broken.
/// PipelineStateError when called before fill(), where the calling thread must not block and
/// the call would wait (RunQueueHooks: an io_context's own thread), or while another of these
/// calls drives the run (from its on_retire, on_failure, source or a task body, or from
/// another thread; from on_retire, a second call would retire the same iteration again and
/// pass over the next). Cancellation: the core's cancel() fails the run, which surfaces here;
/// next(abandon) ends with Cancelled once `abandon` fires, retiring nothing, and the run goes
/// on.
///
/// Example (what Pipeline::run does): `core.driver().retire_all(); core.driver().drain();`
///
/// The core's last member (its parked waits' ticks stop before the members they read go),
/// which it drives as a friend. One caller at a time (the pipeline's driver thread).
class RunDriver {
 public:
  explicit RunDriver(EngineCore& core);
  RunDriver(const RunDriver&) = delete;
  RunDriver& operator=(const RunDriver&) = delete;

  /// Retires the next iteration, waiting for it while the calling thread helps the scheduler.
  std::optional<std::int64_t> progress();
  /// progress() until the run ends (Pipeline::run): how many retired. Same errors.
  std::int64_t retire_all();
  /// progress() whose waits suspend the awaiting coroutine instead of blocking a thread (host
  /// schedulers; on sim it is progress(), which drives virtual time). With `abandon`: once it
  /// fires, the call ends with Cancelled(its reason) having retired nothing.
  Co<std::optional<std::int64_t>> next(const StopSignal* abandon = nullptr);
  /// next() that cancels the run (as cancel("stop requested")) when `token` is stopped while
  /// it waits, or was stopped already.
  Co<std::optional<std::int64_t>> next(std::stop_token token);
  /// Ends the run: no new batches; what is in flight retires; the batches taken but never
  /// admitted go back to the front end (cancelled). Nothing when no run is filled.
  void drain();

  /// drain() without the blocking and re-entry checks (the core's teardown, a serial
  /// iteration's start).
  void end_run();
  /// `call` (a serial run: run_serial, run_one_serial_iter) drives the pipeline until
  /// end_driving(): the calls above, fill and the setters are refused meanwhile, as while one
  /// of them runs. Throws PipelineStateError naming both while another call drives it.
  void begin_driving(const char* call);
  void end_driving() noexcept { driving_.store(nullptr, std::memory_order_release); }
  /// Throws PipelineStateError naming `call` while one of the calls above drives the run (the
  /// core's other entry points that change the run: fill, a serial iteration), e.g. from
  /// on_failure while a failed run's iterations are handed back.
  void refuse_while_driving(const char* call) const;
  /// Waits (with the drain deadline) until everything released finished; false past it.
  bool wait_drained();
  /// The waits of progress(), for the core's device work (an iteration's events).
  [[nodiscard]] DrivenWait& driven() noexcept { return driven_; }

 private:
  class WaitingThread;
  class Driving;

  // Refuses `call` while `driving` (another public call) drives the run.
  [[noreturn, gnu::noinline]] static void throw_reentered(const char* call, const char* driving);

  // progress() and drain() without the blocking check (the teardown's drain, next() on sim).
  std::optional<std::int64_t> retire_next();
  // retire_next inside the scheduler's driving section.
  std::optional<std::int64_t> retire_next_driving();
  // retire_all's run of retirements that need no driving (see retire_next): how many.
  std::int64_t retire_undriven_while_ready();
  // No first admissions to make, no device work holding the oldest iteration back.
  [[nodiscard]] static bool retires_at_once(const EngineCore& c) noexcept;
  // The oldest iteration is complete and retires at once, undriven.
  [[nodiscard]] static bool retires_next_undriven(const EngineCore& c) noexcept;
  // After an undriven retirement: admits what the freed slots take, unless the next
  // iteration retires at once (then after it: its retirement frees a slot too).
  void admit_unless_retirable();
  // At the end of the data (every iteration retired): the run is no longer one cancel() may
  // end. False when it failed (a cancel) just before: that failure surfaces instead.
  bool settle_at_end();
  // After a failed run drained: hands every iteration in flight to the front end as failed
  // or cancelled (none is dropped), then throws the run's error.
  [[noreturn]] void abort_run(bool drained);
  // The error abort_run reports iteration `iter` with, given what failed the run.
  [[nodiscard]] std::exception_ptr abandoned_error(const Failure& failure, std::int64_t iter) const;
  // The deadlines: the oldest iteration did not retire in time; on virtual time, the source
  // waits for something nothing left can do.
  void time_out_retire();
  void starve_timeout();
  // The source's fetch, cancelled as the run ended (drain(), the teardown), did not return
  // within the drain deadline (on virtual time: nothing left to run can end it).
  void time_out_source();
  // Throws PipelineStateError when `would_wait` and the calling thread must not block.
  void refuse_blocking(const char* call, bool would_wait) const;
  [[noreturn, gnu::noinline]] void throw_blocking(const char* call) const;
  // next()'s wait that holds no thread until `Ready` holds, `limit` passes or `abandon`
  // fires; with `wake_on_device`, the oldest iteration's device events wake it too.
  template <bool (EngineCore::*Ready)() const noexcept>
  ParkedWait parked(std::chrono::milliseconds limit, const StopSignal* abandon = nullptr,
                    bool wake_on_device = false);

  EngineCore& core_;
  // The public call driving the run now (progress(), run(), next(), drain()), nullptr while
  // none does (Driving). Atomic: the refused call may come from another thread.
  std::atomic<const char*> driving_{nullptr};
  // progress()'s conditions: the oldest iteration can retire, or the run stops; the source
  // has its answer, or the run stops. Made once (a std::function per call would cost its
  // construction on every retirement).
  std::function<bool()> oldest_done_;
  std::function<bool()> source_or_stop_;
  // progress()'s and drain()'s waits; at each check, the sequencer's deadlines.
  DrivenWait driven_;
  // The deadlines of next()'s waits (ParkedWait). Last: its ticks use the members above.
  ParkedWaitWatch parked_waits_;
};

}  // namespace swp::detail
