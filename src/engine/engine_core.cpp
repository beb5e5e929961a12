// EngineCore: admission, the join counters, the steps of an instance, failure and retirement
// (construction: engine_construction.cpp; device back-pressure: iteration_device_work.cpp;
// the caller's side of a run: run_driver.cpp; the serial iteration: serial_iteration.cpp).

#include "swp/engine/detail/engine_core.hpp"

#include "swp/engine/detail/engine_core_steps.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "swp/async/detail/asymmetric_fence.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

// What EngineCore::waiting_thread_ holds for this thread (initial-exec: read on the hot path
// from the shared library without a __tls_get_addr call).
[[gnu::tls_model("initial-exec")]] constinit thread_local const char this_thread_marker = 0;

void Instance::start(Lane&) noexcept { core().start_instance(*this); }
void Instance::resume(Lane&) noexcept { core().resume_instance(*this); }
// Flattened: an instance's step as a runnable (released under its lane's claim: every task
// alone on its lane) is one function — proceed, run_body, finish, the successors' count-downs
// and releases — without a call, a prologue and reloads of the instance's fields at each of
// them. What is out of line stays so (proceed_guarded, finish_guarded: [[gnu::noinline]]);
// virtual calls (the scheduler, a body's routine) are not inlined.
[[gnu::flatten]] void Instance::run() noexcept { core().run_instance(*this); }

void EngineCore::arm_counters() {
  const std::size_t first = sync_ring_(base_);
  for (std::size_t e = 0; e < sync_.size(); ++e)
    for (Instance& in : sync_[e].instances) {
      in.pending.store(e == first ? tasks_[in.task()].degree_first : tasks_[in.task()].degree,
                       std::memory_order_relaxed);
    }
}

void EngineCore::reset_run_state(std::int64_t base) {
  base_ = base;
  for (auto& sync : sync_) {
    // States are stamped with their iteration, which no later run reuses; cleared anyway, so
    // the hang report of this run shows nothing of the last.
    // What run_serial changed (it runs on the "default" stream), and what the executions
    // then keep from one to the next: nothing, as every finish clears its flags.
    sync.serial_stream = nullptr;
    for (Instance& in : sync.instances) {
      in.clear_state();
      in.stream_used = false;
      in.carries_device_work = false;
    }
    sync.remaining.store(0);
    sync.completed.store(-1);
    // The event generations stay: device work of the last run's iterations may still run on
    // their contexts (a failed run drains bodies, not streams; an iteration retires before
    // its device work unless retire_after_device), and await_slot must still see it before
    // this run writes a new batch into such a slot. Numbering goes on from the last run, so
    // iteration i - depth of this run is that run's iteration when i's slot was its slot.
  }
  arm_counters();
  next_admit_ = base;
  end_ = INT64_MAX;
  oldest_ = base;
  admit_entry_ = oldest_entry_ = sync_ring_(base);
  starved_ = false;
  next_turn_.store(0);
  attention_.fetch_and(static_cast<std::uint8_t>(~trouble_bit));
  failure_.reset();
  sequencer_.reset();
  stop_.reset();
  device_used_.store(false, std::memory_order_relaxed);
  release_->reset();
}

void EngineCore::check_fillable() {
  // From on_retire, on_failure or the source: a failed run's hand-back has marked it unfilled
  // already while it still reports its iterations (a fill there lost them).
  driver_.refuse_while_driving("fill_pipeline");
  require_whole("fill_pipeline");
  if (!filled_) {
    settle_serial_device_work();  // a new run: it reuses the serial iterations' slot 0
    return;
  }
  // A run whose source ended and whose iterations all retired may go on with a new source.
  if (at_end() && !stop_.stop_requested()) return;
  throw PipelineStateError(
      "fill_pipeline while a run is in progress (iterations " + std::to_string(oldest_) + ".." +
      std::to_string(next_admit_ - 1) + " in flight" +
      (end_ == INT64_MAX ? std::string(", its source not ended") : std::string()) +
      "): retire them with progress() until it returns no iteration, or drain() first");
}

void EngineCore::require_whole(const char* call) {
  if (!broken_) return;
  // The bodies that kept the last run from draining ignored cancellation: once they all
  // returned, the pipeline is whole again.
  if (!driver_.wait_drained())
    throw PipelineStateError(
        std::string(call) +
        ": the pipeline is broken: task bodies of an earlier run ignored cancellation and still "
        "run:" +
        (serial_straggler_ != nullptr ? std::string(" the body of a serial iteration")
                                      : hang_report().unfinished()));
  broken_ = false;
  serial_straggler_.reset();
  claims_.end_all();
  // What a fetch that ignored the cancellation brought after the broken run ended.
  hand_back_late_batch();
}

void EngineCore::fill() {
  check_fillable();
  if (filled_) {
    // The run goes on: counters, turns and the iteration before stay as they are, so the
    // next iteration depends on the last one as within a run. It is live again (cancel()).
    std::lock_guard lock(live_mutex_);
    end_ = INT64_MAX;
    live_.store(true, std::memory_order_release);
  } else {
    std::lock_guard lock(live_mutex_);
    reset_run_state(next_admit_);
    claims_.take_all();
    live_.store(true, std::memory_order_release);
  }
  filled_ = true;
  begin_pending_ = true;
  source_stopped_ = false;
}

void EngineCore::satisfy(Instance& in, bool step_ending) noexcept {
  satisfy_as<Releasing::either>(in, step_ending);
}

void EngineCore::ready_by_policy(Instance& in, bool step_ending) noexcept {
  release_->ready(in, step_ending);
}

void EngineCore::require_between_runs(const char* call) const {
  driver_.refuse_while_driving(call);
  if (between_runs()) return;
  throw PipelineStateError(std::string(call) + " while a run is in progress (iterations " +
                           std::to_string(oldest_) + ".." + std::to_string(next_admit_ - 1) +
                           " in flight, or its source not ended): retire them with progress() "
                           "until it returns no iteration, or drain() first");
}

void EngineCore::require_settable(const char* call) const {
  require_between_runs(call);
  // Stragglers of a run that could not drain still read the observer and the timeouts.
  if (broken_ && !drained())
    throw PipelineStateError(std::string(call) +
                             " while the pipeline is broken: task bodies of an earlier run "
                             "ignored cancellation and still run");
}

void EngineCore::set_timeouts(EngineTimeouts timeouts) {
  // The timer thread of next()'s waits and the drivers' waits read them during a run (not
  // the bodies a broken run left running: the teardown's deadline may be set then).
  require_between_runs("set_timeouts");
  // A check interval of 0 made the waits' periodic check fire once: next()'s deadlines (and
  // the sequencer's) were then never looked at again.
  if (timeouts.check_interval <= std::chrono::milliseconds::zero())
    throw std::invalid_argument("EngineTimeouts::check_interval must be positive (it is how "
                                "often a wait looks at its deadlines), got " +
                                std::to_string(timeouts.check_interval.count()) + " ms");
  timeouts_ = std::move(timeouts);
}

void EngineCore::set_failure_policy(FailurePolicy policy) {
  require_between_runs("set_failure_policy");
  policy_ = policy;
}

void EngineCore::set_retire_after_device(bool on) {
  require_between_runs("retire_after_device");
  retire_after_device_ = on;
}

InstanceState EngineCore::state_at(TaskIndex t, std::int64_t iter) const noexcept {
  if (iter < oldest_) return InstanceState::finished;  // retired
  return sync_of(iter).instances[t].state_in(iter);
}

void EngineCore::record_dep_wait(Instance& in, TaskIndex dep, std::int64_t iter) {
  in.wait_for_dependency(dep, iter);
  hooks_.waiting(in, TaskWait{TaskWait::Kind::dependency, dep, iter});
}

void EngineCore::proceed(Instance& in) noexcept { proceed_as<Releasing::either>(in); }

template <Releasing R>
void EngineCore::proceed_as(Instance& in) noexcept {
  forget_last_failure(in);
  // Everything but the common case is out of line: the hot path keeps few registers and a
  // short frame. (Hooks go that way too: its end is run_body.)
  if (!proceeds_plainly(in)) [[unlikely]] {
    proceed_guarded(in);
    return;
  }
  run_plain_body<R>(in);
}

void EngineCore::proceed_guarded(Instance& in) noexcept {
  const TaskIndex t = in.task();
  const TaskInfo& info = *in.info;
  const std::int64_t iter = in.iter();
  const Sync& sync = *in.sync;
  const Sync* previous = iter > base_ ? &in.previous() : nullptr;
  // Trouble in the run, or (skip) in this iteration: the failing instance set it before it
  // counted down its consumers, so a consumer of it sees it here.
  if (trouble() || sync.failed_task.load(std::memory_order_relaxed) != Sync::no_failure) {
    if (stop_.stop_requested()) {
      finish(in, std::make_exception_ptr(Cancelled(stop_.reason())), false);
      return;
    }
    // A dependency's error is this instance's, without running its body; under skip a
    // globally ordered one still takes its turn first (run_body finishes it then).
    if (const std::exception_ptr* error = failed_dependency(in)) {
      if (!info.ordered || policy_ != FailurePolicy::skip) return finish(in, *error, false);
      in.error() = *error;
    }
  }
  // Phase 2 of its dependencies (phase 1, the producers were submitted, is what the counter
  // said). Finished outside the wait's handler, holding no reference (see call_routine).
  if (!wait_for_producers(in, previous)) return finish(in, in.error(), true);
  if (info.ordered && sequencer_.next() != in.turn()) {
    // Not its turn yet: the only step that needs a frame. It holds the lane meanwhile.
    in.set_state(InstanceState::turn);
    hooks_.waiting(in, TaskWait{TaskWait::Kind::turn, t, iter});
    await_turn(in).start_detached(
        info.lane,
        [](void* context, std::exception_ptr& error) noexcept {
          auto* waiting = static_cast<Instance*>(context);
          if (error) {
            // A turn that never came (SequencerTimeout) holds back every later turn: it fails
            // the run under any failure policy (a stopping run's Cancelled changes nothing).
            // The error moves to the instance: this thread keeps no reference (see
            // call_routine).
            waiting->error() = std::move(error);
            EngineCore& core = waiting->core();
            core.fail(core.graph_.name(waiting->task()), waiting->iter(), waiting->error(),
                      FailureKind::task);
            core.finish(*waiting, waiting->error(), true);
          } else {
            waiting->core().run_body(*waiting);
          }
        },
        &in, &stop_, &in);
    return;
  }
  run_body(in);
}

Co<void> EngineCore::await_turn(Instance& in) {
  co_await sequencer_.turn(in.turn(), graph_.name(in.task()), in.iter());  // names it only on error
}

void EngineCore::run_body(Instance& in) noexcept {
  in.set_state(InstanceState::running);
  const TaskInfo& info = *in.info;
  // Only a globally ordered instance enters with an error (a dependency's, taken in
  // proceed_guarded under skip so that it still takes its turn).
  if (hooks_.on() || (info.ordered && in.error())) [[unlikely]] {
    if (hooks_.on()) hooks_.started(in, false);
    if (in.error()) {
      finish(in, in.error(), false);  // a failed dependency's error (see proceed)
      return;
    }
  }
  // Nothing to run (no call, no coroutine), or a body that completed synchronously: it
  // finishes here, as a tail call (nothing of this frame lives on after it).
  if (info.routine == nullptr || run_routine(in, info)) finish(in, no_error, true);
}

template <Releasing R>
void EngineCore::run_plain_body(Instance& in) noexcept {
  in.set_state(InstanceState::running);
  const TaskInfo& info = *in.info;
  if (info.routine == nullptr || run_routine(in, info)) finish_as<true, R>(in, no_error, true);
}

const std::exception_ptr* EngineCore::failed_dependency(const Instance& in) const noexcept {
  const TaskInfo& info = *in.info;
  const Sync& sync = *in.sync;
  for (TaskIndex d : info.intra)
    if (sync.instances[d].failed) return &sync.instances[d].error();
  if (policy_ == FailurePolicy::skip || in.iter() <= base_) return nullptr;
  for (TaskIndex d : info.inter)
    if (in.previous().instances[d].failed) return &in.previous().instances[d].error();
  return nullptr;
}

void EngineCore::start_body(Instance& in, const TaskInfo& info, ErasedCo& body) noexcept {
  // Its continuations run on its lane (which says whether it runs or waits, for the report).
  in.set_state(InstanceState::coroutine);
  body.start_detached(
      info.lane,
      [](void* context, std::exception_ptr& error) noexcept {
        auto* done = static_cast<Instance*>(context);
        // The error moves to the instance, so the frame, destroyed on this thread after this
        // call, holds no reference to it (see call_routine); nullptr when it succeeded.
        done->error() = std::move(error);
        EngineCore& core = done->core();
        // Started by UncountedRuns::run, which has not handed it over yet: it finishes it
        // (one load on the general path).
        if (core.uncounted().takes_completion(*done)) return;
        core.finish(*done, done->error(), true);
      },
      &in, &stop_, &in);
}

void EngineCore::finish(Instance& in, const std::exception_ptr& error, bool own) noexcept {
  finish_as<false>(in, error, own);
}

void EngineCore::finish_guarded(Instance& in, const std::exception_ptr& body_error,
                                bool own) noexcept {
  const TaskIndex t = in.task();
  const std::int64_t iter = in.iter();
  Sync& sync = *in.sync;
  const TaskInfo& info = *in.info;
  // Submission is over (or failed): publish the device point consumers must wait for. A
  // record that threw (not a device fault: those fail the event, see Stream::fault) fails
  // the instance.
  const std::exception_ptr record_error = record_device_point(in);
  const InstanceState state = in.state_in(iter);
  const std::exception_ptr& error = body_error ? body_error : record_error;
  if (record_error && !body_error) own = true;  // its own failure
  if (error) {
    in.failed = true;
    in.error() = error;
    if (policy_ == FailurePolicy::skip && !trouble()) {
      // The iteration fails, not the run: its first own error is the one it reports.
      TaskIndex none = Sync::no_failure;
      if (own) sync.failed_task.compare_exchange_strong(none, t, std::memory_order_release);
    } else {
      // Its own error, a swp::Cancelled of its own included. A Cancelled caused by the run's
      // stop comes after the failure that fired the stop, and the first root cause wins.
      if (own) fail(graph_.name(t), iter, error, FailureKind::task);
      set_trouble(std::memory_order_release);
    }
  }
  // This instance held its turn: pass it on, even after a failure — but only once the run
  // knows of the failure (fail() above, which tells on_run_failed): the next globally ordered
  // instance then sees the stop, and an aborted communicator refuses its collective, instead
  // of pairing it with another rank's earlier one.
  if (info.ordered && (state == InstanceState::running || state == InstanceState::coroutine))
    sequencer_.advance();
  // Observed before the successors learn: whoever they wake starts after this.
  hooks_.finished(in, !in.failed);
}

void EngineCore::fail(const std::string& task, std::int64_t iter, std::exception_ptr error,
                      FailureKind kind) {
  const Failure failure{task, iter, std::move(error), kind};
  const std::optional<std::string> reason = failure_.record(failure);
  if (!reason) return;
  // Wake every cancellable wait (turns, bodies' awaits): the run drains instead of hanging.
  set_trouble(std::memory_order_seq_cst);
  stop_.request_stop(*reason);
  runtime_.scheduler().notify();
  failure_.tell_run_failed(failure);
}

void EngineCore::fail_callback(CallbackError::Callback which, std::int64_t iter) {
  fail("", iter, std::make_exception_ptr(CallbackError(which, iter, std::current_exception())),
       FailureKind::callback);
}

// Retirement (the driver's loops, RunDriver, call retire_oldest: engine_core_hot_path.hpp).

bool EngineCore::retire_ready() const noexcept {
  if (stop_.stop_requested()) return true;
  if (!retirable() || device_holds_oldest()) return false;
  // Retiring admits iteration oldest + slots into the slot oldest frees (when there is one).
  return oldest_ + static_cast<std::int64_t>(depth_) >= end_ || device_done(oldest_);
}

bool EngineCore::drained() const noexcept {
  return release_->drained() && front_.source_idle() &&
         (serial_straggler_ == nullptr || serial_straggler_->ended.load(std::memory_order_acquire));
}

void EngineCore::stop_source() noexcept {
  source_stopped_ = true;
  try {
    front_.end_source();
  } catch (...) {
    // Ending a source only sets flags and fires a stop signal; nothing to report.
  }
}

void EngineCore::hand_back_late_batch() {
  try {
    front_.run_ended(std::make_exception_ptr(
        Cancelled("batch not admitted: the source gave it after its run had failed and could "
                  "not drain")));
  } catch (...) {
    throw CallbackError(CallbackError::Callback::on_failure, -1, std::current_exception(),
                        "while handing back the batch the source gave after its run had failed "
                        "and could not drain");
  }
}

std::exception_ptr EngineCore::task_error(std::int64_t iter, TaskIndex task) const {
  return std::make_exception_ptr(
      TaskError(graph_.name(task), iter, sync_of(iter).instances[task].error()));
}

bool EngineCore::cancel(const std::string& reason) {
  std::lock_guard lock(live_mutex_);
  if (!live_.load(std::memory_order_acquire) || failure_.failed())
    return false;
  const std::string what = "pipeline cancelled: " + reason;
  fail("", -1, std::make_exception_ptr(Cancelled(what)), FailureKind::cancelled);
  return true;
}

// ClockRelease's period (clock_release.cpp) runs ready instances through it.
template void EngineCore::proceed_as<Releasing::clock>(Instance&) noexcept;

}  // namespace swp::detail
