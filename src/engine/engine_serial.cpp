// EngineCore::run_serial: one iteration, tasks in topological order on the calling thread.

#include <optional>
#include <string>

#include "swp/async/detail/drive_to_end.hpp"
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
    std::exception_ptr error;
    ErasedCo body;
    try {
      if (info_[t].routine != nullptr)
        body = info_[t].routine->run(slots_[0].context, in.scope(), box(0, t));
    } catch (...) {
      error = std::current_exception();
    }
    if (body.valid()) {
      // Bodies awaiting virtual CPU time on sim need the scheduler driven; on host they run
      // on, or finish on another thread.
      std::optional<std::exception_ptr> ended = drive_to_end(body, runtime_.scheduler(), &in);
      if (!ended)
        throw PipelineTimeout("serial iteration " + std::to_string(iter) + ": task '" +
                              graph_.name(t) +
                              "' can never finish (it waits for something no task "
                              "will provide)");
      error = std::move(*ended);
    }
    in.set_state(InstanceState::finished);
    end_range(in);
    if (error) {
      in.failed = true;
      in.error() = error;
    }
    if (observer_ != nullptr) observer_->task_finished(t, iter, *info_[t].lane, !error);
    if (error) throw TaskError(graph_.name(t), iter, error);
  }
}

}  // namespace swp::detail
