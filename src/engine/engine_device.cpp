// EngineCore's device back-pressure: whether an iteration's device work completed, watching
// its events while the caller waits, and the wait before a context slot is reused.

#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"

namespace swp::detail {

std::span<const TaskIndex> EngineCore::recorded_tasks(std::int64_t iter) const noexcept {
  // Called once iteration iter completed (every recording instance appended itself before it
  // counted down), while its entry is not reused.
  const Sync& sync = sync_of(iter);
  return {sync.recorded.get(), sync.recorded_count.load(std::memory_order_relaxed)};
}

bool EngineCore::device_events_done(std::int64_t iter) const {
  const Sync& sync = sync_of(iter);
  for (TaskIndex t : recorded_tasks(iter))
    if (!sync.instances[t].device()->event->reached(sync.generation[t])) return false;
  return true;
}

bool EngineCore::fail_on_recorded_fault(std::int64_t iter) noexcept {
  const Sync& sync = sync_of(iter);
  for (TaskIndex t : recorded_tasks(iter)) {
    std::exception_ptr fault = sync.instances[t].device()->event->error(sync.generation[t]);
    if (!fault) continue;
    try {
      fail(graph_.name(t), iter, std::move(fault), FailureKind::task);
    } catch (...) {
      // fail() allocates its message; without memory the run still stops: fire the signal.
      failed_.store(true, std::memory_order_release);
      stop_.request_stop("device fault");
    }
    return true;
  }
  return false;
}

void EngineCore::watch_device(std::int64_t iter) {
  Sync& sync = sync_of(iter);
  for (TaskIndex t : recorded_tasks(iter)) {
    Instance& in = sync.instances[t];
    in.device()->event->add_waiter(sync.generation[t], in.device()->watch);
  }
}

void EngineCore::unwatch_device(std::int64_t iter) {
  Sync& sync = sync_of(iter);
  for (TaskIndex t : recorded_tasks(iter)) {
    Instance& in = sync.instances[t];
    in.device()->event->remove_waiter(in.device()->watch);
  }
}

bool EngineCore::wait_device(std::int64_t iter) {
  if (device_done(iter)) return true;
  // The waker is a member, not a local: a stream may still be calling it after the wait below
  // has seen the events complete.
  watch_device(iter);
  const bool done = wait_for([&] { return device_done(iter); }, timeouts_.retire);
  unwatch_device(iter);
  return done;
}

bool EngineCore::await_slot_device(std::int64_t iter) {
  const auto slots = static_cast<std::int64_t>(depth_);
  // Decision 8: a context slot is reused only once its previous occupant's device work is
  // complete, so the CPU may write the new batch into it. This is also the engines'
  // back-pressure from the device: the CPU runs at most `depth` iterations ahead of it (the
  // iteration `depth` before; its context slot is the one before, see context_slots).
  if (wait_device(iter - slots)) return !fail_on_device_fault(iter - slots);
  fail("", iter, std::make_exception_ptr(slot_timeout(iter)), FailureKind::timeout);
  return false;
}

PipelineTimeout EngineCore::slot_timeout(std::int64_t iter) const {
  const std::int64_t previous = iter - static_cast<std::int64_t>(depth_);
  return device_timeout(previous, "so iteration " + std::to_string(iter) + " cannot have its slot");
}

PipelineTimeout EngineCore::device_timeout(std::int64_t iter, const std::string& so) const {
  const HangReport report = hang_report();
  const std::string unfinished = report.unfinished();
  // On virtual time the wait ends unfinished only when nothing is left to run (wait_for).
  const std::string why =
      runtime_.scheduler().virtual_time()
          ? " can never complete (nothing left to run: deadlock)"
          : " did not complete within " + std::to_string(timeouts_.retire.count()) + " ms";
  return report.error("device work of iteration " + std::to_string(iter) + why + ", " + so +
                      "; device work not complete:" + report.device_work(iter) +
                      (unfinished.empty() ? "" : "\nunfinished:" + unfinished));
}

}  // namespace swp::detail
