// EngineCore::run_serial: one iteration, tasks in topological order on the calling thread.

#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

void EngineCore::run_serial(std::int64_t iter) {
  if (filled_) {
    // A run that ended (its source and every iteration) ends for good: serial iterations
    // reuse its first slot and entry, so it could not go on after them.
    require_between_runs("run_one_serial_iter");
    end_run();
  }
  Stream& stream = runtime_.stream("default");
  Sync& sync = sync_[0];
  for (TaskIndex t : slots_[0].boxed) slots_[0].boxes[t]->reset();
  sync.iter = iter;
  sync.slot = 0;
  sync.serial_stream = &stream;
  for (Instance& in : sync.instances) {
    in.stream_used = false;
    in.carries_device_work = false;
    in.failed = false;
    in.error() = nullptr;
    in.set_state(InstanceState::idle);
  }
  for (TaskIndex t : serial_order_) {
    Instance& in = sync.instances[t];
    // Observed like a pipelined instance: released, started and finished, in serial order.
    if (observer_ != nullptr) {
      observer_->task_released(t, iter, *info_[t].lane);
      observer_->task_started(t, iter, *info_[t].lane);
    }
    in.set_state(InstanceState::running);
    if (nvtx_) start_range(in, true);
    // The outcome is written by whichever thread finishes the body (on host a body may
    // resume on the thread that completed what it awaited): atomically, and followed by a
    // notify, so the waiting caller neither races nor sleeps through it.
    struct Outcome {
      std::atomic<bool> finished{false};
      std::exception_ptr error;
      Scheduler* scheduler = nullptr;
    } outcome;
    outcome.scheduler = &runtime_.scheduler();
    ErasedCo body;
    try {
      if (info_[t].routine != nullptr) body = info_[t].routine->run(slots_[0].context, in.scope(), box(0, t));
    } catch (...) {
      outcome.error = std::current_exception();
      outcome.finished.store(true);
    }
    if (body.valid()) {
      body.start(
          nullptr,
          [](void* context, std::exception_ptr& error) noexcept {
            auto* o = static_cast<Outcome*>(context);
            o->error = std::move(error);
            Scheduler* scheduler = o->scheduler;
            o->finished.store(true, std::memory_order_seq_cst);
            scheduler->notify();
          },
          &outcome, nullptr, &in);
    } else {
      outcome.finished.store(true);
    }
    // Bodies awaiting virtual CPU time on sim need the scheduler driven; on host they ran, or
    // finish on another thread.
    if (!outcome.finished.load(std::memory_order_seq_cst))
      runtime_.scheduler().drive_until(
          [&] { return outcome.finished.load(std::memory_order_seq_cst); },
          Clock::time_point::max());
    if (!outcome.finished.load(std::memory_order_seq_cst))
      throw PipelineTimeout("serial iteration " + std::to_string(iter) + ": task '" +
                            graph_.name(t) +
                            "' can never finish (it waits for something no task "
                            "will provide)");
    in.set_state(InstanceState::finished);
    end_range(in);
    if (outcome.error) {
      in.failed = true;
      in.error() = outcome.error;
    }
    if (observer_ != nullptr) observer_->task_finished(t, iter, *info_[t].lane, !outcome.error);
    if (outcome.error) throw TaskError(graph_.name(t), iter, outcome.error);
  }
}

}  // namespace swp::detail
