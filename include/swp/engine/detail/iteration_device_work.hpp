#pragma once
// IterationDeviceWork: whether the device work an iteration queued has completed, its faults,
// and the back-pressure it puts on context slots and retirement (not for direct use).

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "swp/async/scheduler.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/instance.hpp"
#include "swp/engine/errors.hpp"

namespace swp {
class StopSignal;
}

namespace swp::detail {

class EngineCore;

/// What the callables the tasks queued on their streams (TaskScope::enqueue) threw, each kept
/// with its task and iteration until the engine reports it as that task's failure in that
/// iteration: where it looks at the iteration's device work (which completes after them), or
/// else at the next synchronization of the pipeline's streams. Shared with each callable's
/// wrapper, which may run on a stream's thread after the pipeline is gone. Any thread.
///
/// A serial iteration's number is its caller's to choose, and may be one an earlier serial
/// iteration (or run) had: an error kept from then, not reported yet, is not the later one's.
/// So each error is also stamped with the serial iteration that queued its callable (0: none,
/// a pipelined iteration, whose numbers are never reused), and take() matches the stamp too.
class HostWorkErrors {
 public:
  struct Error {
    std::int64_t iter = 0;
    TaskIndex task = 0;
    std::exception_ptr error;
    std::uint64_t serial = 0;  // the serial iteration that queued it (begin_serial), or 0
  };
  /// A serial iteration starts (the driving thread, before its bodies): the callables queued
  /// from now until end_serial() are stamped with the count returned, which no other serial
  /// iteration of this pipeline gets (from 1 on).
  std::uint64_t begin_serial() noexcept {
    serial_now_.store(++serial_count_, std::memory_order_relaxed);
    return serial_count_;
  }
  /// The serial iteration ended (its bodies did): callables queued from now on are a
  /// pipelined run's.
  void end_serial() noexcept { serial_now_.store(0, std::memory_order_relaxed); }
  /// The stamp of a callable queued now (guard_host_work, on the thread of the body that
  /// queues it): the serial iteration running, or 0. Relaxed: begin_serial was stored before
  /// that iteration's bodies started, and end_serial after they ended (that orders them).
  [[nodiscard]] std::uint64_t serial_now() const noexcept {
    return serial_now_.load(std::memory_order_relaxed);
  }
  /// Keeps `error` (a stream's thread). Errors: std::bad_alloc (nothing kept then).
  void add(Error error) {
    const std::lock_guard lock(mutex_);
    errors_.push_back(std::move(error));
    any_.store(true, std::memory_order_release);
  }
  /// Nothing kept: one load, no lock (an acquire: whoever saw the event recorded after a
  /// callable reached sees what it kept).
  [[nodiscard]] bool empty() const noexcept { return !any_.load(std::memory_order_acquire); }
  /// Takes what task `task` of iteration `iter` queued and threw first (nullptr: nothing):
  /// queued by serial iteration `serial` (begin_serial's count), or by a pipelined one (0).
  /// Errors: std::system_error where the lock fails (nothing taken).
  std::exception_ptr take(std::int64_t iter, TaskIndex task, std::uint64_t serial = 0) {
    const std::lock_guard lock(mutex_);
    for (auto it = errors_.begin(); it != errors_.end(); ++it)
      if (it->iter == iter && it->task == task && it->serial == serial) {
        std::exception_ptr error = std::move(it->error);
        errors_.erase(it);
        any_.store(!errors_.empty(), std::memory_order_relaxed);
        return error;
      }
    return nullptr;
  }
  /// Takes the error kept first, if any.
  std::optional<Error> take_first() {
    const std::lock_guard lock(mutex_);
    if (errors_.empty()) return std::nullopt;
    Error first = std::move(errors_.front());
    errors_.erase(errors_.begin());
    any_.store(!errors_.empty(), std::memory_order_relaxed);
    return first;
  }

 private:
  std::mutex mutex_;
  std::vector<Error> errors_;  // in the order they were thrown
  std::atomic<bool> any_{false};
  std::atomic<std::uint64_t> serial_now_{0};  // see serial_now()
  std::uint64_t serial_count_ = 0;            // serial iterations begun; the driving thread's
};

/// An iteration whose tasks used their streams recorded an event per such task as it finished
/// (IterationSync::recorded); its device work is complete once every one of them is reached.
/// This is what the core asks of it:
/// - a context slot is reused only once its previous occupant's device work completed, so the
///   CPU may write the new batch into it (DESIGN.md decision 8) — the engines' back-pressure
///   from the device: the CPU runs at most `depth` iterations ahead of it (await_slot);
/// - with retire_after_device, an iteration retires only once its device work completed
///   (device_holds_oldest; a serial one: await_serial_device_work);
/// - a fault the device reported for an event (Event::error: a DeviceFault) fails the run with a
///   TaskError naming the task that queued the work and the iteration (fail_on_device_fault);
///   so does an exception a callable it queued threw (HostWorkErrors), except that under
///   FailurePolicy::skip an iteration not retired yet (retire_after_device) fails alone; a
///   serial iteration with retire_after_device throws that TaskError before it retires
///   (serial_device_fault and HostWorkErrors, looked at by run_serial_iteration);
/// - a wait for it runs with the retire deadline, the pipeline's scheduler woken by the events
///   (watch, the waker), and ends in a PipelineTimeout naming the work not done.
/// Every question costs one load for an iteration that recorded nothing (every host-only one).
///
/// A base of EngineCore, which drives it as a friend (its steps reach the core at a fixed
/// offset, see UncountedRuns); on the driving thread, except where noted.
class IterationDeviceWork {
 public:
  explicit IterationDeviceWork(Scheduler& scheduler) : device_waker_(scheduler) {}
  IterationDeviceWork(const IterationDeviceWork&) = delete;
  IterationDeviceWork& operator=(const IterationDeviceWork&) = delete;

  /// Whether iteration iter's device work is complete.
  [[nodiscard]] bool device_done(std::int64_t iter) const;
  /// Once iteration iter's device work completed: fails the run when some of it faulted or a
  /// callable of it threw; true when it did (the run failed, now or before). A callable's
  /// error in an iteration not retired yet fails only that iteration under skip (false).
  /// Out of line: only retire_after_device asks it at every retirement, and inlined there it
  /// took registers from the retirement loop of every run (+3 instructions per iteration).
  bool fail_on_device_fault(std::int64_t iter) noexcept;
  /// Before admitting the core's next iteration: waits (with the retire deadline) until its
  /// slot's previous occupant, iteration next - depth, completed its device work; false when
  /// that failed the run (a fault, or the deadline).
  bool await_slot();
  /// Waits (with the retire deadline) until iteration iter's device work completed; false past
  /// the deadline (the caller fails the run).
  bool wait_device(std::int64_t iter);
  /// Before a serial iteration (no run filled): waits (with the retire deadline) until the
  /// device work every entry still records completed, then forgets it. The serial iteration
  /// writes slot 0, and the run after it starts at a number of its own, whose first slot no
  /// admission before it awaited: with nothing recorded, no slot has device work to wait for.
  /// Faults are not looked at here: a faulted stream stays so, and the next run (or
  /// synchronize()) reports it. Errors: PipelineTimeout past the deadline (nothing forgotten).
  void settle_device_work();
  /// Before a new run (check_fillable), before a serial iteration writes slot 0
  /// (await_serial_slot) and, with retire_after_device, before a serial iteration retires
  /// (run_serial_iteration's end): where a serial iteration queued device work on the "default"
  /// stream since this was last waited for (serial_device_work_), waits (with the retire
  /// deadline) until the stream reached an event recorded on it now. Serial iterations record
  /// nothing of their own, and run_one_serial_iter returns before its device work completed
  /// (retire_after_device off): the run or serial iteration after it would otherwise write
  /// slot 0 (and start its own device work) while that work still ran and could read it; and
  /// with it on, on_retire would read slot 0 before that work wrote it. `stop`, where given
  /// (a serial run's), ends the wait early once requested. Faults are not looked at, as in
  /// settle_device_work (serial_device_fault tells them after it). Returns true once the work
  /// completed (or none was queued); false past the deadline or on `stop`, nothing forgotten: it is
  /// waited for again next time. Errors: the record's.
  bool await_serial_device_work(const StopSignal* stop);
  /// Why the "default" stream reached the event the last successful await_serial_device_work
  /// recorded without its work done (a DeviceFault: the stream faulted before it, see
  /// Event::error), or nullptr: it completed normally, or none was recorded yet. With
  /// retire_after_device, what a serial iteration that queued work on "default" looks at
  /// once it waited for it (run_serial_iteration), as fail_on_device_fault does for a
  /// pipelined one.
  [[nodiscard]] std::exception_ptr serial_device_fault() const noexcept;
  /// What await_serial_device_work past its deadline is: a PipelineTimeout naming the stream
  /// ("device work of serial iterations on stream 'default' did not complete within N ms, "
  /// + `so`; on sim, "can never complete (nothing left to run: deadlock)").
  [[nodiscard]] PipelineTimeout serial_device_timeout(const std::string& so) const;
  /// check_fillable's await_serial_device_work. Errors: the record's; its PipelineTimeout
  /// past the deadline (nothing changed).
  void settle_serial_device_work();
  /// The waker listens to (stops listening to) iteration iter's recorded events.
  void watch_device(std::int64_t iter);
  void unwatch_device(std::int64_t iter);
  /// retire_after_device: the oldest iteration's device work is what keeps it from retiring.
  [[nodiscard]] bool device_holds_oldest() const;
  /// Fails the run: the oldest iteration's device work did not complete in time.
  void time_out_device_retire();
  /// Fails the run: iteration iter's slot is not free in time (its previous occupant's device
  /// work did not complete).
  void time_out_slot(std::int64_t iter);
  /// What the release of a retired iteration's slot may do, for one that recorded device work.
  enum class DeviceRelease : std::uint8_t { running, done, faulted };
  [[gnu::noinline]] static DeviceRelease device_release(EngineCore& core,
                                                        std::int64_t iter) noexcept;
  /// Phase 2 of `in`'s dependencies, as its step starts: its stream waits for the event of
  /// each producer (of its iteration, and of `previous`, the iteration before, where it is
  /// not null) that recorded one, where their streams differ, and `in` carries device work
  /// from then on. Only where some producer of the iteration recorded an event at all. False
  /// when a wait threw: its error is in.error(), and the caller finishes `in` with it.
  static bool wait_for_producers(Instance& in, const IterationSync* previous) noexcept;
  /// As `in` finishes: where its body used its stream or it carries device work, records its
  /// event on its stream (made at its first record) and publishes the generation its
  /// consumers wait for (IterationSync::generation, recorded); otherwise that there is none.
  /// Returns the record's error (nullptr: none), with nothing to wait for published.
  std::exception_ptr record_device_point(Instance& in) noexcept;
  /// Iteration iter's device work did not complete in time; `so`: what could not happen.
  [[nodiscard]] PipelineTimeout device_timeout(std::int64_t iter, const std::string& so) const;

  /// Wakes the pipeline's scheduler when an event an instance recorded is reached (each
  /// InstanceEvent keeps a reference: it outlives every instance).
  SchedulerWaker device_waker_;
  /// Iterations retire only once their device work completed (a pipeline setting, between
  /// runs).
  bool retire_after_device_ = false;
  /// What the callables of TaskScope::enqueue threw (shared with their wrappers).
  const std::shared_ptr<HostWorkErrors> host_work_errors_ = std::make_shared<HostWorkErrors>();
  /// Throws the first callable's error still kept as its task's TaskError (naming the task and
  /// iteration): after the pipeline's streams were synchronized, for what no look at an
  /// iteration's device work reported (run(), run_serial(), synchronize()).
  void throw_host_work_error();
  /// A task of this run used its stream (EngineCore::finish_guarded); relaxed: a hint for the
  /// release policies, read on the driving thread.
  std::atomic<bool> device_used_{false};
  /// Some instance of this pipeline recorded an event, in this run or an earlier one (never
  /// cleared: a run's device work may outlive it). Until then no slot has a previous
  /// occupant's device work to wait for (await_slot: one load instead of finding the entry).
  /// Relaxed: stored before the recording instance finishes, so whoever saw that iteration
  /// complete (the retirement before a slot is reused) sees it.
  std::atomic<bool> recorded_ever_{false};
  /// A serial iteration's body used the "default" stream, and its work was not waited for
  /// since (await_serial_device_work). Driving thread only.
  bool serial_device_work_ = false;

 private:
  [[nodiscard]] EngineCore& core() noexcept;
  [[nodiscard]] const EngineCore& core() const noexcept;
  // The calls past the common case of the inline questions are static, taking the core: with
  // the base's `this` as their argument, a retirement loop kept that pointer too (0.5
  // instructions per task with one thread).
  [[nodiscard]] static bool device_events_done(const EngineCore& core, std::int64_t iter);
  // fail_on_device_fault past the common case: the iteration recorded device work.
  [[gnu::noinline]] static bool fail_on_recorded_fault(EngineCore& core,
                                                       std::int64_t iter) noexcept;
  // The tasks of iteration iter that recorded an event (once it completed).
  [[nodiscard]] static std::span<const TaskIndex> recorded_tasks(const EngineCore& core,
                                                                 std::int64_t iter) noexcept;
  // await_slot past the common case: the previous occupant recorded device work.
  [[gnu::noinline]] static bool await_slot_device(EngineCore& core, std::int64_t iter);
  [[nodiscard]] PipelineTimeout slot_timeout(std::int64_t iter) const;
  // await_serial_device_work's event on "default" and its registration with the waker, made
  // at its first wait.
  std::unique_ptr<InstanceEvent> serial_event_;
  // The generation of serial_event_ the last successful await_serial_device_work waited for
  // (0: none yet), for serial_device_fault.
  std::uint64_t serial_generation_ = 0;
};

}  // namespace swp::detail
