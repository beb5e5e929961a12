#pragma once
// abort_peers_on_failure: a pipeline's failed run aborts its communicators, so that the other
// ranks learn of it within a second instead of waiting out their collectives' timeout.

#include <concepts>
#include <exception>
#include <functional>
#include <string>

#include "swp/comm/communicator.hpp"

namespace swp {

namespace detail {

/// What an exception says: its what(), or "unknown exception" for one that is no
/// std::exception.
inline std::string what_of(const std::exception_ptr& error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "unknown exception";
}

}  // namespace detail

/// Something that reports a failed run as it fails: swp::Pipeline's on_run_failed (a concept
/// rather than the type, so that the comm layer includes no engine header).
template <class Pipe>
concept ReportsRunFailures = requires(Pipe& pipe,
                                      std::function<void(const std::exception_ptr&)> callback) {
  pipe.on_run_failed(std::move(callback));
};

/// Makes every failed run of `pipe` abort `comms` (Communicator::abort) at the moment it fails,
/// on the thread where it fails, with the run's error message as the reason — for a task,
/// "task 'Forward' failed in iteration 7: corrupt record ...". Every other rank's pending and
/// later operations on those communicators (and on those that abort with them) then fail at
/// once with CommAborted, "rank 0: all_reduce 'Forward iter 7' (1024 f32) failed: rank 1
/// aborted: task 'Forward' failed in iteration 7: corrupt record ...", and so do their runs:
/// their TaskError names their own task, its CommAborted the failed rank, task and iteration.
/// A run that fails because a peer aborted changes nothing more (the first abort wins), and
/// so no rank waits out its timeouts. A cancelled run (cancel()) aborts too: the peers'
/// collectives would otherwise wait for this rank.
/// Sets the pipeline's on_run_failed callback (replacing one set before; call it between runs);
/// the communicators must outlive the pipeline's runs. An aborted communicator stays aborted:
/// a job that goes on after a failure makes new ones.
/// Example (every rank):
/// ```
/// auto world = swp::MpiCommunicator::world();
/// swp::DataFlowPipeline<Ctx> pipe(rt, plan, depth);   // tasks call collectives on *world
/// swp::abort_peers_on_failure(pipe, *world);
/// pipe.run(batches);  // throws within a second on every rank when one rank's task throws
/// ```
template <ReportsRunFailures Pipe, std::derived_from<Communicator> Comm,
          std::derived_from<Communicator>... More>
void abort_peers_on_failure(Pipe& pipe, Comm& comm, More&... more) {
  pipe.on_run_failed([&comm, &more...](const std::exception_ptr& error) {
    const std::string reason = detail::what_of(error);
    static_cast<Communicator&>(comm).abort(reason);
    (static_cast<Communicator&>(more).abort(reason), ...);
  });
}

}  // namespace swp
