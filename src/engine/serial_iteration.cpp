// run_serial_iteration: one iteration, tasks in topological order on the calling thread.

#include "swp/engine/detail/serial_iteration.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "swp/async/detail/drive_to_end.hpp"
#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

void prepare_serial_iteration(EngineCore& c) {
  c.driver_.refuse_while_driving("run_one_serial_iter");
  if (c.filled_) {
    // A run that ended (its source and every iteration) ends for good: serial iterations
    // reuse its first slot and entry, so it could not go on after them.
    c.require_between_runs("run_one_serial_iter");
    c.driver_.end_run();
  }
  c.settle_device_work();
  c.release_retired(c.oldest_);  // none holds device work now: each is released
}

void run_serial_iteration(EngineCore& c, std::int64_t iter) {
  prepare_serial_iteration(c);
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
  for (TaskIndex t : c.tasks_.serial_order()) {
    Instance& in = sync.instances[t];
    // Observed like a pipelined instance: released, started and finished, in serial order.
    if (c.observer_ != nullptr) {
      c.observer_->task_released(t, iter, *c.tasks_[t].lane);
      c.observer_->task_started(t, iter, *c.tasks_[t].lane);
    }
    in.set_state(InstanceState::running);
    if (c.nvtx_) c.start_range(in, true);
    std::exception_ptr error;
    ErasedCo body;
    try {
      if (c.tasks_[t].routine != nullptr)
        body = ErasedCo(c.tasks_[t].routine->run(c.slots_[0].context, in.scope(), c.box(0, t)));
    } catch (...) {
      error = std::current_exception();
    }
    if (body.valid()) {
      // Bodies awaiting virtual CPU time on sim need the scheduler driven; on host they run
      // on, or finish on another thread.
      std::optional<std::exception_ptr> ended = drive_to_end(body, c.runtime_.scheduler(), &in);
      if (!ended)
        throw PipelineTimeout("serial iteration " + std::to_string(iter) + ": task '" +
                              c.graph_.name(t) +
                              "' can never finish (it waits for something no task "
                              "will provide)");
      error = std::move(*ended);
    }
    in.set_state(InstanceState::finished);
    c.end_range(in);
    if (error) {
      in.failed = true;
      in.error() = error;
    }
    if (c.observer_ != nullptr) c.observer_->task_finished(t, iter, *c.tasks_[t].lane, !error);
    if (error) throw TaskError(c.graph_.name(t), iter, error);
  }
}

}  // namespace swp::detail
