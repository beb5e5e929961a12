// IterationDeviceWork: an instance's waits for its producers' events and the record of its own,
// whether an iteration's device work completed or faulted, watching its events while the
// caller waits, the wait before a context slot is reused, and the errors of a wait past its
// deadline.

#include "swp/engine/detail/iteration_device_work.hpp"

#include <optional>
#include <string>
#include <utility>

#include "swp/async/cancelled.hpp"
#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

bool IterationDeviceWork::wait_for_producers(Instance& in, const IterationSync* previous) noexcept {
  const TaskInfo& info = *in.info;
  const IterationSync& sync = *in.sync;
  // The producers of one entry (`deps` of `of`) that recorded an event.
  const auto wait_for = [&](const IterationSync& of, std::span<const TaskIndex> deps) {
    for (TaskIndex d : deps)
      if (const std::uint64_t generation = of.generation[d]) {
        in.carries_device_work = true;
        const Instance& producer = of.instances[d];
        if (producer.info->stream != info.stream)
          info.stream->wait(*producer.device()->event, generation);
      }
  };
  try {
    if (sync.device()) wait_for(sync, info.intra);
    if (previous != nullptr && previous->device()) wait_for(*previous, info.inter);
  } catch (...) {
    in.error() = std::current_exception();
    return false;
  }
  return true;
}

std::exception_ptr IterationDeviceWork::record_device_point(Instance& in) noexcept {
  IterationSync& sync = *in.sync;
  const TaskIndex t = in.task();
  if (!in.stream_used && !in.carries_device_work) return nullptr;
  if (!device_used_.load(std::memory_order_relaxed)) {
    device_used_.store(true, std::memory_order_relaxed);
    recorded_ever_.store(true, std::memory_order_relaxed);
  }
  std::exception_ptr error;
  try {
    // Made at the instance's first record: most instances of most plans never record one, and
    // an event per instance per entry was most of a large pipeline's memory (100k tasks, the
    // clock's 5 entries: ~100 MB) and of its construction time. Those that record keep
    // theirs: no allocation per task once each has recorded.
    if (!in.device())
      in.device() =
          std::make_unique<InstanceEvent>(core().runtime_.device().make_event(), device_waker_);
    sync.generation[t] = in.stream().record(*in.device()->event);
  } catch (...) {
    sync.generation[t] = 0;  // nothing to wait for: consumers see the instance failed
    error = std::current_exception();
  }
  if (sync.generation[t] != 0)
    sync.recorded[sync.recorded_count.fetch_add(1, std::memory_order_relaxed)] = t;
  // Cleared for the instance's next execution (which does not reset them as it starts).
  in.stream_used = false;
  in.carries_device_work = false;
  return error;
}

bool IterationDeviceWork::fail_on_device_fault(std::int64_t iter) noexcept {
  EngineCore& c = core();
  return c.sync_of(iter).device() && fail_on_recorded_fault(c, iter);
}

std::span<const TaskIndex> IterationDeviceWork::recorded_tasks(const EngineCore& core,
                                                               std::int64_t iter) noexcept {
  // Called once iteration iter completed (every recording instance appended itself before it
  // counted down), while its entry is not reused.
  const IterationSync& sync = core.sync_of(iter);
  return {sync.recorded.get(), sync.recorded_count.load(std::memory_order_relaxed)};
}

bool IterationDeviceWork::device_events_done(const EngineCore& core, std::int64_t iter) {
  const IterationSync& sync = core.sync_of(iter);
  const std::span<const TaskIndex> recorded = recorded_tasks(core, iter);
  const auto reached = [&](TaskIndex t) {
    return sync.instances[t].device()->event->reached(sync.generation[t]);
  };
  // The event recorded last first: work queued later mostly completes later, so while a wait
  // asks again after each completion (DrivenWait), the answer costs one look until the end —
  // a scan from the front re-read every event reached so far (quadratic: 16k tasks on streams
  // of their own took 3.6 s on sim, 92% of it here).
  if (!recorded.empty() && !reached(recorded.back())) return false;
  for (TaskIndex t : recorded)
    if (!reached(t)) return false;
  return true;
}

bool IterationDeviceWork::fail_on_recorded_fault(EngineCore& core, std::int64_t iter) noexcept {
  IterationSync& sync = core.sync_of(iter);
  for (TaskIndex t : recorded_tasks(core, iter)) {
    std::exception_ptr fault = sync.instances[t].device()->event->error(sync.generation[t]);
    // A callable the task queued threw (before the event recorded after it was reached).
    if (!fault && !core.host_work_errors_->empty()) {
      try {
        fault = core.host_work_errors_->take(iter, t);
      } catch (...) {
        // The lock failed: that failure is the task's fault, handled as a callable's error is
        // (below: under skip, for an iteration not retired yet, that iteration's failure;
        // otherwise the run fails with it).
        fault = std::current_exception();
      }
      // Not retired yet (retire_after_device): under skip it is this iteration's failure
      // alone, which retires in its turn as failed (its first own error stays).
      if (fault && core.policy_ == FailurePolicy::skip && iter >= core.oldest_) {
        Instance& in = sync.instances[t];
        in.failed = true;
        in.error() = std::move(fault);
        TaskIndex none = IterationSync::no_failure;
        sync.failed_task.compare_exchange_strong(none, t, std::memory_order_release);
        continue;
      }
    }
    if (!fault) continue;
    EngineCore& c = core;
    try {
      c.fail(c.graph_.name(t), iter, std::move(fault), FailureKind::task);
    } catch (...) {
      // fail() allocates its message; without memory the run still stops: fire the signal.
      c.failure_.mark_failed();
      c.stop_.request_stop("device fault");
    }
    return true;
  }
  return false;
}

void IterationDeviceWork::throw_host_work_error() {
  if (host_work_errors_->empty()) return;
  if (std::optional<HostWorkErrors::Error> first = host_work_errors_->take_first())
    throw TaskError(core().graph_.name(first->task), first->iter, std::move(first->error));
}

void IterationDeviceWork::watch_device(std::int64_t iter) {
  IterationSync& sync = core().sync_of(iter);
  for (TaskIndex t : recorded_tasks(core(), iter)) {
    Instance& in = sync.instances[t];
    in.device()->event->add_waiter(sync.generation[t], in.device()->watch);
  }
}

void IterationDeviceWork::unwatch_device(std::int64_t iter) {
  IterationSync& sync = core().sync_of(iter);
  for (TaskIndex t : recorded_tasks(core(), iter)) {
    Instance& in = sync.instances[t];
    in.device()->event->remove_waiter(in.device()->watch);
  }
}

bool IterationDeviceWork::wait_device(std::int64_t iter) {
  if (device_done(iter)) return true;
  // The waker is a member, not a local: a stream may still be calling it after the wait below
  // has seen the events complete.
  watch_device(iter);
  const bool done =
      core().driver_.driven().until([&] { return device_done(iter); }, core().timeouts_.retire);
  unwatch_device(iter);
  return done;
}

void IterationDeviceWork::settle_device_work() {
  EngineCore& c = core();
  if (!recorded_ever_.load(std::memory_order_relaxed)) return;
  // An entry that records device work holds it for the pipelined iteration it was admitted
  // for (serial iterations record none), so its number finds it (sync_of).
  for (IterationSync& sync : c.sync_)
    if (sync.device() && !wait_device(sync.iter))
      throw device_timeout(sync.iter, "so a serial iteration cannot reuse the context slots");
  for (IterationSync& sync : c.sync_) sync.forget_recorded();
}

bool IterationDeviceWork::await_serial_device_work(const StopSignal* stop) {
  if (!serial_device_work_) return true;
  EngineCore& c = core();
  Stream& stream = c.runtime_.stream("default");
  if (!serial_event_)
    serial_event_ =
        std::make_unique<InstanceEvent>(c.runtime_.device().make_event(), device_waker_);
  Event& event = *serial_event_->event;
  // The stream runs in order: what the serial runs queued on it is done once this is reached.
  const std::uint64_t generation = stream.record(event);
  const auto reached = [&] { return event.reached(generation); };
  if (!reached()) {
    // A failure or cancel() stops the serial run: fail() notifies the scheduler, which wakes
    // this wait to see it.
    const auto reached_or_stop = [&] {
      return reached() || (stop != nullptr && stop->stop_requested());
    };
    event.add_waiter(generation, serial_event_->watch);
    const bool done = c.driver_.driven().until(reached_or_stop, c.timeouts_.retire);
    event.remove_waiter(serial_event_->watch);
    if (!done || !reached()) return false;
  }
  serial_device_work_ = false;
  serial_generation_ = generation;
  return true;
}

std::exception_ptr IterationDeviceWork::serial_device_fault() const noexcept {
  return serial_generation_ != 0 ? serial_event_->event->error(serial_generation_) : nullptr;
}

PipelineTimeout IterationDeviceWork::serial_device_timeout(const std::string& so) const {
  const EngineCore& c = core();
  // On virtual time the wait ends unfinished only when nothing is left to run (DrivenWait).
  const std::string why =
      c.runtime_.scheduler().virtual_time()
          ? " can never complete (nothing left to run: deadlock)"
          : " did not complete within " + std::to_string(c.timeouts_.retire.count()) + " ms";
  return c.hang_report().error("device work of serial iterations on stream 'default'" + why +
                               ", " + so);
}

void IterationDeviceWork::settle_serial_device_work() {
  if (!await_serial_device_work(nullptr))
    throw serial_device_timeout("so a run cannot start after them (it reuses their context slot)");
}

bool IterationDeviceWork::await_slot_device(EngineCore& core, std::int64_t iter) {
  IterationDeviceWork& self = core;
  const auto slots = static_cast<std::int64_t>(core.depth_);
  // Decision 8: a context slot is reused only once its previous occupant's device work is
  // complete, so the CPU may write the new batch into it. This is also the engines'
  // back-pressure from the device: the CPU runs at most `depth` iterations ahead of it (the
  // iteration `depth` before; its context slot is the one before, see context_slots).
  if (self.wait_device(iter - slots)) return !self.fail_on_device_fault(iter - slots);
  self.time_out_slot(iter);
  return false;
}

void IterationDeviceWork::time_out_slot(std::int64_t iter) {
  core().fail("", iter, std::make_exception_ptr(slot_timeout(iter)),
              FailureKind::timeout);
}

PipelineTimeout IterationDeviceWork::slot_timeout(std::int64_t iter) const {
  const std::int64_t previous = iter - static_cast<std::int64_t>(core().depth_);
  return device_timeout(previous, "so iteration " + std::to_string(iter) + " cannot have its slot");
}

PipelineTimeout IterationDeviceWork::device_timeout(std::int64_t iter,
                                                    const std::string& so) const {
  const EngineCore& c = core();
  const HangReport report = c.hang_report();
  const std::string unfinished = report.unfinished();
  // On virtual time the wait ends unfinished only when nothing is left to run (DrivenWait).
  const std::string why =
      c.runtime_.scheduler().virtual_time()
          ? " can never complete (nothing left to run: deadlock)"
          : " did not complete within " + std::to_string(c.timeouts_.retire.count()) + " ms";
  return report.error("device work of iteration " + std::to_string(iter) + why + ", " + so +
                      "; device work not complete:" + report.device_work(iter) +
                      (unfinished.empty() ? "" : "\nunfinished:" + unfinished));
}

IterationDeviceWork::DeviceRelease IterationDeviceWork::device_release(EngineCore& core,
                                                                       std::int64_t iter) noexcept {
  bool done = false;
  try {
    done = device_events_done(core, iter);
  } catch (...) {
    // A device that cannot say: the context stays until its slot is reused.
  }
  if (!done) return DeviceRelease::running;  // its device work may still write into the context
  // The run fails naming it; released all the same.
  return fail_on_recorded_fault(core, iter) ? DeviceRelease::faulted : DeviceRelease::done;
}

void IterationDeviceWork::time_out_device_retire() {
  EngineCore& c = core();
  c.fail("", c.oldest_,
         std::make_exception_ptr(
             device_timeout(c.oldest_,
                            "so it cannot retire (retire_after_device: iterations retire after "
                            "their device work)")),
         FailureKind::timeout);
}

}  // namespace swp::detail
