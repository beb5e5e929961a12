#pragma once
// The engine core shared by DataFlowPipeline and ClockPipeline (not for direct use).
//
// One core, two release policies (DESIGN.md decision 1): everything about slots, instances,
// dependencies, events, lanes, the sequencer, errors, deadlines and cancellation lives here;
// the policies differ only in when an instance (task, iteration) is released to its lane.
// Concepts of their own, in their own files:
// - bases of the core whose steps reach it at a fixed offset: the runs without join counters
//   (UncountedRuns), the in-place runs (InPlaceRuns), the iterations' device work
//   (IterationDeviceWork: an instance's waits for its producers' events and the record of its
//   own, completion, faults);
// - each task's TaskInfo and join counts (TaskTable), the lane claims (lane_claim.hpp), the
//   observer's calls and NVTX ranges (TaskHooks), a context slot;
// - the caller's side of a run — progress(), next(), drain(), their waits and deadlines, the
//   abort of a failed run (RunDriver) — and the serial iteration (run_serial_iteration);
// - what went wrong: the failure record (RunFailure), the hang report (HangReport).
// The steps that finish an instance, inline for the flattened paths: engine_core_steps.hpp;
// the other hot paths: engine_core_hot_path.hpp.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/async/detail/run_queue_hooks.hpp"
#include "swp/async/future.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/sequencer.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/device/event.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/detail/context_slot.hpp"
#include "swp/engine/detail/engine.hpp"
#include "swp/engine/detail/front_end.hpp"
#include "swp/engine/detail/hang_report.hpp"
#include "swp/engine/detail/in_place_runs.hpp"
#include "swp/engine/detail/instance.hpp"
#include "swp/engine/detail/iteration_device_work.hpp"
#include "swp/engine/detail/lane_claim.hpp"
#include "swp/engine/detail/output_box.hpp"
#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/detail/ring_index.hpp"
#include "swp/engine/detail/run_driver.hpp"
#include "swp/engine/detail/run_failure.hpp"
#include "swp/engine/detail/serial_iteration.hpp"
#include "swp/engine/detail/task_hooks.hpp"
#include "swp/engine/detail/task_routine.hpp"
#include "swp/engine/detail/task_table.hpp"
#include "swp/engine/detail/uncounted_runs.hpp"
#include "swp/engine/engine_timeouts.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/failure_policy.hpp"
#include "swp/engine/fast_paths.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp {

class TaskScope;

namespace detail {

/// This thread's marker for EngineCore::waiting_thread_ (its address names the thread).
// constinit: no check for a dynamic initializer at each use.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local const char this_thread_marker;

class EngineCore : private UncountedRuns, private IterationDeviceWork, private InPlaceRuns {
 public:
  /// The core of a pipeline over `graph` running up to `slots` iterations at once (its depth),
  /// for the typed `front` (which must outlive it), which keeps Engine::context_slots(slots)
  /// contexts. Tasks have no routine until set_routine.
  EngineCore(Runtime& runtime, PlanGraph graph, ReleasePolicy::Make release, std::size_t slots,
             FrontEnd& front);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  /// What runs for `task` (nullptr: nothing, its instances finish without a call). Set only
  /// while nothing is in flight; read on lanes.
  void set_routine(TaskIndex task, const TaskRoutine* routine) noexcept {
    tasks_[task].routine = routine;
  }

  /// Throws PipelineStateError when fill() would (a run in progress, or a broken pipeline
  /// whose bodies still run): the front end checks before it replaces its source. Before a
  /// new run, waits for the device work serial iterations left on "default"
  /// (settle_serial_device_work: PipelineTimeout past the retire deadline).
  void check_fillable();
  /// Starts a run — or continues one whose source ended and whose iterations all retired:
  /// iteration numbers go on from the last admitted one either way. Calls no source: the
  /// first admissions happen in the next progress()/next()/drain().
  void fill();
  /// The caller's side of the run: progress(), retire_all(), next(), drain() (RunDriver).
  [[nodiscard]] RunDriver& driver() noexcept { return driver_; }
  [[nodiscard]] bool filled() const noexcept { return filled_; }
  /// Nothing is in flight: no run, or a run whose source ended and whose iterations all
  /// retired (progress() returned no iteration; a new fill may go on with it). What the
  /// between-runs setters accept.
  [[nodiscard]] bool between_runs() const noexcept {
    return !filled_ || (at_end() && !failure_.failed());
  }
  /// Throws PipelineStateError naming `call` unless between_runs(), or while a call drives
  /// the pipeline (RunDriver::refuse_while_driving: from a callback or body of progress(),
  /// run(), next(), drain() or a serial run).
  void require_between_runs(const char* call) const;
  /// The first iteration of the current (or last) run: the one with no iteration before it.
  [[nodiscard]] std::int64_t base() const noexcept { return base_; }
  /// The iteration the next admission makes.
  [[nodiscard]] std::int64_t next_iteration() const noexcept { return next_admit_; }
  /// Ends everything in flight before the pipeline goes: drains a filled run and waits for
  /// every released instance to finish (up to the drain deadline, then a fatal error, see
  /// HangReport::die_undrained). The destructor does it too; the front end calls it first
  /// thing in its most-derived destructor, while the bodies the lanes still call into are
  /// whole (its vtable included). Idempotent.
  void shut_down() noexcept;

  /// Ends the run in flight with Cancelled("pipeline cancelled: " + reason), from any thread:
  /// the run's stop signal wakes every cancellable wait, the run drains, and the progress()
  /// or next() in progress (or the next one) throws it. True when a run was in flight and
  /// had not failed yet; false otherwise (nothing changes then).
  bool cancel(const std::string& reason);
  /// Called once per failing run with its error, where and when it fails (see
  /// Pipeline::on_run_failed). Set between runs.
  void set_on_run_failed(std::function<void(const std::exception_ptr&)> callback) {
    require_between_runs("on_run_failed");
    failure_.set_on_run_failed(std::move(callback));
  }

  [[nodiscard]] const PlanGraph& graph() const noexcept { return graph_; }
  [[nodiscard]] Runtime& runtime() const noexcept { return runtime_; }
  /// The runtime's scheduler's run-queue capability (the plain hooks where it has none),
  /// asked once, as the engine binds to the runtime.
  [[nodiscard]] RunQueueHooks& run_queue() noexcept { return run_queue_; }
  /// How many iterations may be in flight at once (the depth).
  [[nodiscard]] std::size_t slots() const noexcept { return depth_; }
  /// The order a serial iteration (run_serial_iteration) runs tasks in: topological over intra
  /// deps, ties by name.
  [[nodiscard]] const std::vector<TaskIndex>& serial_order() const noexcept {
    return tasks_.serial_order();
  }
  [[nodiscard]] Stream& stream_of(TaskIndex t) const noexcept { return *tasks_[t].stream; }
  [[nodiscard]] Lane& lane_of(TaskIndex t) const noexcept { return *tasks_[t].lane; }

  /// Throws std::invalid_argument for a check interval that is not positive;
  /// PipelineStateError as require_between_runs("set_timeouts").
  void set_timeouts(EngineTimeouts timeouts);
  /// What a task's error does to the run (see FailurePolicy); between runs only.
  void set_failure_policy(FailurePolicy policy);
  [[nodiscard]] FailurePolicy failure_policy() const noexcept { return policy_; }
  /// Iterations retire only once their device work completed (see Pipeline); between runs.
  void set_retire_after_device(bool on);
  [[nodiscard]] bool retire_after_device() const noexcept { return retire_after_device_; }
  /// What the callables of TaskScope::enqueue threw, until reported (see HostWorkErrors).
  [[nodiscard]] const std::shared_ptr<HostWorkErrors>& host_work_errors() const noexcept {
    return host_work_errors_;
  }
  /// Throws the first callable's error no look at its iteration's device work reported, as
  /// its task's TaskError; for the front end, once it synchronized the streams.
  void throw_host_work_error() { IterationDeviceWork::throw_host_work_error(); }
  /// The signal every instance's waits listen to; fired when the run fails or times out.
  [[nodiscard]] const StopSignal& stop_signal() const noexcept { return stop_; }
  /// Between runs (require_settable): the lanes and the serial iteration read it.
  void set_observer(TaskObserver* observer) {
    require_settable("set_observer");
    hooks_.set_observer(observer);
    update_hooks();
  }
  [[nodiscard]] TaskObserver* observer() const noexcept { return hooks_.observer(); }
  /// NVTX ranges for instances (where compiled in): returns whether they are on. Between runs
  /// (require_settable).
  bool set_nvtx(bool on) {
    require_settable("enable_nvtx");
    const bool ranges = hooks_.set_nvtx(on);
    update_hooks();
    return ranges;
  }
  /// What the setters of what the lanes read (observer, NVTX) require: no call
  /// drives the pipeline, no run is in progress (require_between_runs), and no body of a
  /// broken run still runs. Throws PipelineStateError naming `call` otherwise. A per-call check.
  void require_settable(const char* call) const;

  /// The output box of `task` for the iteration in context slot `slot`.
  [[nodiscard]] OutputBox* box(std::size_t slot, TaskIndex task) const {
    return slots_[slot].boxes[task].get();
  }
  /// The instance of `task` in the same iteration as `in`.
  [[nodiscard]] Instance& sibling(const Instance& in, TaskIndex task) const {
    return in.sync->instances[task];
  }

  // The steps of an instance (Instance::start and resume call them, on its lane; run, as a
  // runnable of its lane's scheduler, released under its lane's claim once its counter reached
  // zero).
  void start_instance(Instance& in) noexcept {
    if (start_proceeds_) {
      proceed(in);
    } else {
      release_->start(in);
    }
  }
  void resume_instance(Instance& in) noexcept { proceed(in); }
  void run_instance(Instance& in) noexcept { proceed(in); }

 private:
  friend class DataFlowRelease;
  friend class ClockRelease;
  friend class HangReport;
  friend class IterationDeviceWork;
  friend class InPlaceRuns;
  friend class UncountedRuns;
  friend class RunDriver;
  friend void run_serial_iteration(EngineCore& core, std::int64_t iter);
  friend void begin_serial_run(EngineCore& core, const char* call);
  friend void end_serial_run(EngineCore& core) noexcept;
  friend struct SerialSteps;

  using Sync = IterationSync;

  // The runs without join counters (FastPaths::uncounted), which the release policies take.
  UncountedRuns& uncounted() noexcept { return *this; }
  // The in-place runs (FastPaths::in_place), which the release policies take.
  InPlaceRuns& in_place() noexcept { return *this; }

  Sync& sync_of(std::int64_t iter) noexcept { return sync_[sync_ring_(iter)]; }
  const Sync& sync_of(std::int64_t iter) const noexcept { return sync_[sync_ring_(iter)]; }
  void arm_counters();
  void reset_run_state(std::int64_t base);
  // Fetches iteration next_admit_'s batch and resets its slot and sync entry (prepare), and
  // publishes it (admit = prepare + count_admitted()).
  bool prepare();
  bool admit();
  // The entry after entry `e` in the ring of sync entries (and of context slots: the two
  // rings are one size, so an iteration's slot and entry have one index).
  [[nodiscard]] std::size_t entry_after(std::size_t e) const noexcept {
    return e + 1 == sync_ring_.size() ? 0 : e + 1;
  }
  // next_admit_ and oldest_ move on by one, their entries with them (no ring arithmetic on
  // the caller's path).
  void count_admitted() noexcept {
    ++next_admit_;
    admit_entry_ = entry_after(admit_entry_);
  }
  void count_retired() noexcept {
    ++oldest_;
    oldest_entry_ = entry_after(oldest_entry_);
  }
  // One thing `in` waited for happened; the last one tells the release policy.
  // `step_ending`: called at the end of a lane step (see ReleasePolicy::ready).
  void satisfy(Instance& in, bool step_ending = false) noexcept;
  // Releasing: which engine's release the step is compiled for (releasing.hpp).
  template <Releasing R>
  void satisfy_as(Instance& in, bool step_ending) noexcept;
  // The release policy's ready, out of line: where the clock's instances are released once
  // ready (a call per release) rather than a copy at each count-down.
  [[gnu::noinline]] void ready_by_policy(Instance& in, bool step_ending) noexcept;
  // One of the events `in`'s join counter counts happened: true when it was the last.
  bool count_down(Instance& in) noexcept;
  // Re-arms the counter of a consumed instance for iteration iter + E (see Instance); `info`:
  // its task's, where the caller has it at hand.
  static void rearm(Instance& in) noexcept { rearm(in, *in.info); }
  static void rearm(Instance& in, const TaskInfo& info) noexcept {
    in.pending.store(info.degree, std::memory_order_relaxed);
  }
  // Hands a globally ordered instance its sequencer turn as it is released.
  void assign_turn(Instance& in) noexcept {
    if (in.info->ordered) in.turn() = next_turn_.fetch_add(1, std::memory_order_relaxed);
  }
  // Releases `in` to its lane (a globally ordered one with its sequencer turn); true when it
  // bypasses the lane (released under its lane's claim), which the clock engine's caller then
  // posts itself once it is ready.
  bool submit(Instance& in, bool step_ending = false) noexcept;
  // Posts `in`, released under its lane's claim and ready, to its lane's scheduler: as the
  // next runnable of a lane step that ends (`step_ending`), else as new work.
  void post_claimed(Instance& in, bool step_ending) noexcept {
    post_claimed(in, in.info->lane->scheduler(), step_ending);
  }
  // The same, where the caller has the lane's scheduler at hand (submit, on every release).
  static void post_claimed(Instance& in, Scheduler& scheduler, bool step_ending) noexcept {
    if (step_ending) {
      scheduler.post_next(in);
    } else {
      scheduler.post(in);
    }
  }
  // The data-flow release of an instance whose counter reached zero (DataFlowRelease::ready;
  // inline here, so the hot path needs no virtual call to get there). Nothing decrements the
  // entry's next iteration before this instance finished (see Instance), so it is re-armed
  // now; ordered instances are released one after the other, so turns go out in (iteration,
  // rank) order.
  void release_now(Instance& in, bool step_ending) noexcept {
    rearm(in);
    submit(in, step_ending);
  }
  // The instance holds its lane and waits for producer `dep` of iteration `iter`.
  void record_dep_wait(Instance& in, TaskIndex dep, std::int64_t iter);
  [[nodiscard]] InstanceState state_at(TaskIndex t, std::int64_t iter) const noexcept;
  // Dependencies done: stream waits (phase 2), the turn, then the body.
  void proceed(Instance& in) noexcept;
  // proceed() compiled for one engine's release (see Releasing); the clock's period runs its
  // ready instances through proceed_as<Releasing::clock>.
  template <Releasing R>
  void proceed_as(Instance& in) noexcept;
  // The common case of proceed() (and InPlaceRuns::run): no trouble or hooks, no failure and no
  // device work in its iteration, no turn to take, no device work of the iteration before to
  // wait for where it has inter dependencies.
  [[nodiscard]] bool proceeds_plainly(const Instance& in) const noexcept {
    const TaskInfo& info = *in.info;
    const Sync& sync = *in.sync;
    if (attention_.load(std::memory_order_acquire) != 0 ||
        sync.failed_task.load(std::memory_order_relaxed) != Sync::no_failure || sync.device())
      return false;
    return !info.proceeds_guarded ||
           (!info.ordered && (sync.iter <= base_ || !in.previous().device()));
  }
  // An execution of `in` starts: the failure of its entry's iteration before is forgotten
  // (consumers read it only after this instance finished). Its stream and device flags need
  // no reset: finish_guarded, the only path where a flag is set, clears them, and a run starts
  // with them cleared (reset_run_state, after run_serial).
  static void forget_last_failure(Instance& in) noexcept {
    if (in.failed) [[unlikely]] {
      in.failed = false;
      in.error() = nullptr;
    }
  }
  // proceed() past the common case: trouble, device waits, a turn to take.
  [[gnu::noinline]] void proceed_guarded(Instance& in) noexcept;
  void run_body(Instance& in) noexcept;
  // run_body for an instance that proceeded the common way (see proceed) with no hooks: no
  // dependency's error to take, nothing to tell; its finish has only its stream to look at.
  template <Releasing R>
  void run_plain_body(Instance& in) noexcept;
  // Runs the task's routine: true when it completed synchronously and without an error (the
  // caller finishes the instance); false when it finished it or started its coroutine.
  bool run_routine(Instance& in, const TaskInfo& info) noexcept;
  // run_routine's two halves: calls the routine (false: it threw, its error in in.error(); the
  // caller finishes the instance after the handler), and starts a body that did not complete
  // synchronously (its continuations finish the instance). `scope`, `box`, `slot`: the
  // instance's, its output's and its iteration's. `body` comes back released (in registers),
  // a coroutine's frame adopted by an ErasedCo only where there is one.
  static bool call_routine(Instance& in, const TaskInfo& info, TaskScope& scope, OutputBox* box,
                           const ContextSlot& slot, ReleasedCo& body) noexcept;
  void start_body(Instance& in, const TaskInfo& info, ErasedCo& body) noexcept;
  // Out of line: the finish of hooks, errors and coroutines, kept out of the flattened paths.
  [[gnu::noinline]] void finish(Instance& in, const std::exception_ptr& error, bool own) noexcept;
  // finish(): `Plain`, for run_plain_body's instance that completed synchronously without an
  // error (no device work carried in, not ordered, no NVTX range, no observer), which checks
  // only whether its body used its stream.
  template <bool Plain, Releasing R = Releasing::either>
  void finish_as(Instance& in, const std::exception_ptr& error, bool own) noexcept;
  // finish_as past the instance's own state: its count-downs.
  template <bool Plain, Releasing R = Releasing::either>
  void count_finished(Instance& in) noexcept;
  // finish() past the common case: device work to record, a turn to pass on, an error, an
  // NVTX range, an observer.
  [[gnu::noinline]] void finish_guarded(Instance& in, const std::exception_ptr& error,
                                        bool own) noexcept;
  Co<void> await_turn(Instance& in);
  // Errors, deadlines, drain.
  // Records the failure (the first root cause wins, see RunFailure); the first stops the run
  // and tells on_run_failed.
  void fail(const std::string& task, std::int64_t iter, std::exception_ptr error, FailureKind kind);
  // Fails the run with the exception in flight, which `which` threw for iteration `iter`.
  void fail_callback(CallbackError::Callback which, std::int64_t iter);
  // A broken pipeline (bodies of an earlier run ignored cancellation) becomes whole once they
  // all returned: waits for them (drain deadline), else throws PipelineStateError naming `call`.
  void require_whole(const char* call);
  // What the run waits for, for a deadline's error (see HangReport).
  [[nodiscard]] HangReport hang_report() const noexcept { return HangReport(*this); }
  // What the driver (RunDriver) asks. Every iteration retired and the source ended.
  [[nodiscard]] bool at_end() const noexcept { return oldest_ >= next_admit_ && oldest_ >= end_; }
  // The source answered "not yet" and has its answer now: advance() can admit.
  [[nodiscard]] bool admissible() const noexcept { return starved_ && front_.source_ready(); }
  // Nothing in flight, and the source has no batch yet: the driver waits for the source.
  [[nodiscard]] bool starving() const noexcept { return starved_ && oldest_ >= next_admit_; }
  [[nodiscard]] bool retire_or_admit() const noexcept { return retire_ready() || admissible(); }
  [[nodiscard]] bool source_or_stop() const noexcept {
    return admissible() || stop_.stop_requested();
  }
  // The first admissions of a run (fill() calls no source).
  void begin_run() {
    if (!begin_pending_) return;
    begin_pending_ = false;
    release_->advance();
  }
  // Releases the contexts (front end) and output values of the retired iterations below
  // `below` whose device work completed, oldest first, up to the first whose device work
  // still runs (released by a later call). A finished iteration keeps nothing alive.
  // True when it found device work that faulted instead (fail_on_device_fault): the run
  // failed, and the caller surfaces it.
  bool release_retired(std::int64_t below) noexcept;
  // Resets slot s's output boxes and hands its context back to the front end.
  void release_slot(std::size_t s) noexcept;
  // The run failed or stops: no more batches, and what waits for the source is cancelled.
  void stop_source() noexcept;
  // Hands the front end a batch the source gave after a run that could not drain had ended
  // (a fetch that ignored cancellation), now that it returned: before a refill or the
  // teardown, so that it is neither lost nor admitted into another run. Throws CallbackError
  // when on_failure throws.
  void hand_back_late_batch();
  // The oldest iteration completed.
  [[nodiscard]] bool retirable() const noexcept { return complete(oldest_, sync_[oldest_entry_]); }
  // Every instance of iteration iter finished and none touches the core any more.
  [[nodiscard]] bool complete(std::int64_t iter) const noexcept {
    return complete(iter, sync_of(iter));
  }
  // The same, with the iteration's entry at hand.
  [[nodiscard]] static bool complete(std::int64_t iter, const Sync& sync) noexcept {
    return sync.completed.load(std::memory_order_seq_cst) == iter;
  }
  // next()'s retirable: also the slot it frees holds no device work (so the admission that
  // follows does not block); or the run stops.
  [[nodiscard]] bool retire_ready() const noexcept;
  // Everything released finished, and no source call is in progress.
  [[nodiscard]] bool drained() const noexcept;
  // Retires the oldest iteration (on_retire, or on_failure when it failed under skip) and
  // lets the next ones in; returns it, or -1 when the run failed (meanwhile, or by the
  // callback throwing) and nothing retired.
  std::int64_t retire_oldest();
  // retire_oldest without the admissions, which the caller makes (the policy's advance())
  // once it retired what retires in a row (RunDriver::admit_unless_retirable); false when
  // nothing retired.
  bool retire_oldest_only();
  // The error of an iteration that failed under FailurePolicy::skip (nullptr: it did not).
  [[nodiscard]] std::exception_ptr iteration_error(std::int64_t iter) const {
    const TaskIndex task = sync_of(iter).failed_task.load(std::memory_order_acquire);
    return task == Sync::no_failure ? nullptr : task_error(iter, task);
  }
  [[nodiscard]] std::exception_ptr task_error(std::int64_t iter, TaskIndex task) const;
  // The error of an instance's failed dependency (nullptr: none failed). Inter-iteration
  // dependencies count only under fail_run (skip keeps a failure within its iteration).
  [[nodiscard]] const std::exception_ptr* failed_dependency(const Instance& in) const noexcept;

  Runtime& runtime_;
  RunQueueHooks& run_queue_;  // run_queue_hooks_of(runtime_.scheduler())
  // The shortcuts this core may take (Runtime::fast_paths): without lane_claims no task has a
  // claim, and everything below it needs one; the release policies ask for the others.
  const FastPaths fast_;
  PlanGraph graph_;
  FrontEnd& front_;
  EngineTimeouts timeouts_;
  TaskHooks hooks_;  // the observer and NVTX ranges (set between runs)

  // Every task's TaskInfo, its streams, the serial order, the join counts. With an observer
  // attached, an iteration counts every instance (IterationSync::counts_all), not only the
  // table's completion_count(): submit() tells the observer under the hooks' lock, which a
  // releasing instance still holds after its successor went to its lane, so its own decrement
  // must come after that.
  TaskTable tasks_;
  LaneClaims claims_;  // of the tasks alone on their lanes
  std::size_t depth_ = 1;  // iterations in flight at most
  std::vector<ContextSlot> slots_;
  std::vector<Sync> sync_;
  // The TaskScope of every instance, entry after entry, in one allocation (a plan of 100,000
  // tasks is built without an allocation per instance); trivially destructible.
  std::unique_ptr<std::byte[]> scopes_;
  RingIndex slot_ring_;  // iteration -> its slot in slots_
  RingIndex sync_ring_;  // iteration -> its entry in sync_
  SubmissionSequencer sequencer_;
  StopSignal stop_;
  // What the lanes read at every step, written between runs (or, for attention_, when a run
  // fails): apart from the caller's run state below, whose writes at every iteration would
  // otherwise take these cache lines from the lanes' cores.
  //
  // When instances go to their lanes (made before the counters are armed).
  std::unique_ptr<ReleasePolicy> release_;
  // What an instance's proceed looks at first, in one byte (one load and one test on the hot
  // path for both):
  // - trouble_bit: some instance failed in this run, or the run is stopping: the one flag the
  //   hot path reads (proceed, finish) before it looks at the stop signal and at its
  //   dependencies' outcomes. Set before the stop is requested and before a failed instance
  //   counts down its consumers; cleared when a run starts.
  // - hooks_bit: an observer or NVTX ranges: an instance's step tells them. Set with them,
  //   between runs.
  // Each bit is set and cleared with a read-modify-write (failure paths and set-up only), so
  // neither writer loses the other's bit (a straggler of a broken run may still fail while
  // the caller attaches an observer).
  static constexpr std::uint8_t trouble_bit = 1;
  static constexpr std::uint8_t hooks_bit = 2;
  std::atomic<std::uint8_t> attention_{0};
  [[nodiscard]] bool trouble() const noexcept {
    return (attention_.load(std::memory_order_acquire) & trouble_bit) != 0;
  }
  void set_trouble(std::memory_order order) noexcept { attention_.fetch_or(trouble_bit, order); }
  void update_hooks() noexcept {
    if (hooks_.on()) {
      attention_.fetch_or(hooks_bit, std::memory_order_relaxed);
    } else {
      attention_.fetch_and(static_cast<std::uint8_t>(~hooks_bit), std::memory_order_relaxed);
    }
  }
  // The release policy's start is proceed and its ready is release_now (data-flow): no
  // virtual call to get to either.
  bool start_proceeds_ = false;
  FailurePolicy policy_ = FailurePolicy::fail_run;
  // The first iteration of the run: its instances have no iteration before them (inter
  // dependencies, the ordered chain). Iteration numbers continue across runs.
  std::int64_t base_ = 0;

  // Run state (caller thread, except where noted), written at every admission and retirement:
  // on cache lines of its own.
  alignas(64) bool filled_ = false;
  bool broken_ = false;
  // The body of a serial iteration that ignored cancellation past the drain deadline (broken_),
  // until it ends (drained() looks at it).
  std::shared_ptr<SerialOutcome> serial_straggler_;
  bool begin_pending_ = false;  // filled, first admissions not tried yet
  // stop_source() ended this run's source: a fetch still running was cancelled, and what
  // waits for it has the drain deadline (RunDriver). Cleared by fill.
  bool source_stopped_ = false;
  // The last admission found the source with no batch yet (Admission::pending); set by
  // prepare, cleared by the policies' advance.
  bool starved_ = false;
  // A run is in flight (fill to its end or failure): what cancel() may end, from any thread.
  // cancel() holds live_mutex_ from its look at live_ through its fail(), and fill holds it
  // while it resets the run state and sets live_: a cancel racing with a refill ends the old
  // run or the new one, never half of the reset.
  std::atomic<bool> live_{false};
  std::mutex live_mutex_;
  std::int64_t next_admit_ = 0;   // next iteration to fetch
  std::int64_t end_ = INT64_MAX;  // first iteration with no batch
  std::int64_t oldest_ = 0;       // oldest unretired iteration
  // Every retired iteration below it had its context released (release_retired); its entry.
  std::int64_t released_upto_ = 0;
  std::size_t released_entry_ = 0;
  // Their entries (and slots): sync_ring_(next_admit_), sync_ring_(oldest_).
  std::size_t admit_entry_ = 0;
  std::size_t oldest_entry_ = 0;
  // ReleasePolicy::retires_undriven: a retirement that needs no wait takes no driving section.
  // Set from the policy when it is made; the data-flow policy clears it for the rest of a run
  // once its tasks use their streams (DataFlowRelease::advance) and sets it again at the next.
  bool retires_undriven_ = false;
  // Next sequencer turn to hand out at release. Clock: the caller's; data-flow: ordered
  // releases form one chain (each happens after the one before), so a plain counter would do;
  // it is atomic so that the lanes' hand-offs need no reasoning about it.
  std::atomic<std::uint64_t> next_turn_{0};
  // The thread waiting in progress() (RunDriver) for this pipeline's iterations, as the
  // address of its thread_local marker (nullptr: none, or the waiter holds no thread). An
  // instance that completes an iteration on that very thread calls no notify(): the waiter
  // looks at `completed` itself when the runnable returns, and nobody else waits for it.
  // relaxed: only the waiting thread stores its own marker, so a thread reading its own
  // address reads its own latest store; any other value means "notify". On a line of its own
  // (with the two flags its scope sets): every instance that counts towards an iteration's
  // completion reads it as it finishes, and beside oldest_ and the other fields the caller
  // writes at every admission and retirement that read missed whenever a worker completed an
  // iteration.
  alignas(64) std::atomic<const void*> waiting_thread_{nullptr};
  // The waiting thread retires undriven, outside the scheduler's runnables: the policies'
  // advance, on that thread only, need not ask RunQueueHooks::runs_no_work_here again.
  bool waiter_runs_no_work_ = false;
  // run()'s loop of undriven retirements (RunDriver::retire_undriven_while_ready), which
  // retires every iteration that completes: the clock's advance() may retire the iteration
  // each of its periods completes itself and open the next period (ClockRelease::open_periods).
  bool advance_may_retire_ = false;

  alignas(64) RunFailure failure_;  // what failed the run (the first root cause)
  // The caller's side of the run. Last: its parked waits' ticks use the members above.
  RunDriver driver_{*this};
};

}  // namespace detail
}  // namespace swp

// The inline definitions of the hot paths (releases, the uncounted step, admissions).
#include "swp/engine/detail/engine_core_hot_path.hpp"
