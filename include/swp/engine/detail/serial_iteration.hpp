#pragma once
// run_serial_iteration: one iteration of a pipeline's plan run serially on the calling thread,
// for run_serial and run_one_serial_iter (not for direct use).

#include <cstdint>

namespace swp::detail {

class EngineCore;

/// Runs iteration `iter` of `core`'s plan, whose context the caller put in context slot 0, on
/// the calling thread: the tasks in EngineCore::serial_order (topological over the intra
/// dependencies, ties by name), each to its end before the next starts, all device work on the
/// "default" stream — the baseline a pipelined run is compared to. The observer and NVTX
/// ranges see each task released, started and finished, as in a pipelined run.
///
/// Completion: returns once every task finished (a body that awaits is driven to its end here,
/// virtual time included). Errors: PipelineStateError while a run is in progress (a run that
/// ended is ended for good first: the serial iteration reuses its first slot and entry); a
/// task's error as TaskError, after which the tasks after it do not run; PipelineTimeout when a
/// body awaits something no task will provide. Cancellation: none (it is not a run, so the
/// core's cancel() does not reach it; bodies see no stop).
///
/// Example (what Pipeline::run_one_serial_iter does once the context is in slot 0):
/// `run_serial_iteration(core, 7);`
void run_serial_iteration(EngineCore& core, std::int64_t iter);

/// What run_serial_iteration does first, for the front end to call before it writes the
/// context into slot 0: the state checks (PipelineStateError while a run is in progress, or
/// while progress()/run()/next()/drain() runs — from a callback of theirs) and the end of a run
/// that ended (whose last releases may still reset slot 0). Nothing changes when it throws.
void prepare_serial_iteration(EngineCore& core);

}  // namespace swp::detail
