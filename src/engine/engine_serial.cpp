// EngineCore::run_serial: one iteration, tasks in topological order on the calling thread.

#include <string>

#include "swp/engine/detail/engine_core.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp::detail {

void EngineCore::run_serial(std::int64_t iter) {
  if (filled_)
    throw PipelineStateError("run_one_serial_iter while the pipeline is filled; drain() first");
  Stream& stream = runtime_.stream("default");
  Sync& sync = sync_[0];
  for (auto& box : slots_[0].boxes)
    if (box) box->reset();
  for (auto& in : sync.instances) {
    in->iter = iter;
    in->slot = 0;
    in->stream_used = false;
    in->failed = false;
    in->done.reset();
  }
  for (TaskIndex t : serial_order_) {
    Instance& in = *sync.instances[t];
    struct Outcome {
      bool finished = false;
      std::exception_ptr error;
    } outcome;
    // Observed like a pipelined instance: released, started and finished, in serial order.
    if (observer_ != nullptr) {
      observer_->task_released(t, iter, *lanes_[t]);
      observer_->task_started(t, iter, *lanes_[t]);
    }
    TaskScope scope(*this, in, stream);
    Co<void> body = bodies_.run_body(t, 0, scope);
    if (!body.valid()) {  // a body with nothing to do (a task without body or costs)
      if (observer_ != nullptr) observer_->task_finished(t, iter, *lanes_[t], true);
      in.done.set_value();
      continue;
    }
    body.start(
        nullptr,
        [](void* context, const std::exception_ptr& error) noexcept {
          auto* o = static_cast<Outcome*>(context);
          o->error = error;
          o->finished = true;
        },
        &outcome, nullptr, &in);
    // Bodies awaiting virtual CPU time on sim need the scheduler driven; on host they ran.
    if (!outcome.finished)
      runtime_.scheduler().drive_until([&] { return outcome.finished; }, Clock::time_point::max());
    if (!outcome.finished)
      throw PipelineTimeout("serial iteration " + std::to_string(iter) + ": task '" +
                            graph_.name(t) +
                            "' can never finish (it waits for something no task "
                            "will provide)");
    if (observer_ != nullptr) observer_->task_finished(t, iter, *lanes_[t], !outcome.error);
    if (outcome.error) {
      in.done.set_error(outcome.error);
      throw TaskError(graph_.name(t), iter, outcome.error);
    }
    in.done.set_value();
  }
}

}  // namespace swp::detail
