#pragma once
// EngineTimeouts: the deadlines of a pipeline's waits (DESIGN.md decision 7).

#include <chrono>
#include <string>

namespace swp {

/// The deadlines of a pipeline's waits (seed: 60 s retire, 30 s sequencer), set with
/// `Pipeline::set_timeouts` between runs. Every wait of a run has one, so a hang fails loudly
/// instead of blocking forever.
///
/// - `retire`: how long progress(), next() or async_progress() waits for the oldest iteration
///   to retire, and for a context slot's device work to complete before the slot is reused.
///   Exceeding it cancels the run (every waiter is woken with Cancelled), drains it and throws
///   PipelineTimeout naming every unfinished (task, iteration) and what it waits for; the
///   pipeline can be filled again. On the sim backend (virtual time) the deadlines do not
///   apply to the model — a task may model minutes of work —, and a run that can make no
///   progress at all is reported as a deadlock at once ("can never retire (nothing left to
///   run: deadlock)"); this holds for every deadline below.
/// - `sequencer`: how long a globally ordered instance may wait for its submission turn.
///   Exceeding it fails that instance with SequencerTimeout, so progress() throws TaskError
///   naming the instance, with the SequencerTimeout as `nested()`.
/// - `check_interval` (positive: set_timeouts throws std::invalid_argument otherwise): how
///   often a wait (progress(), next()) looks at the deadlines while it waits (it wakes at
///   once when something completes).
/// - `drain`: how long a failed run (a task's error, a callback's, a deadline) waits for what
///   it released to finish before its error is thrown, and how long drain() (or the
///   destructor's drain) waits for the source's fetch it cancelled (an awaitable source or a
///   channel receive that suspended). Cancelled waits end at once; a body, or a fetch, whose
///   await ignores cancellation is waited for. Past the deadline progress() (drain()) throws
///   PipelineTimeout ("could not drain", naming the failure that started the drain and what
///   still runs: "the source's fetch of the batch for iteration N: ..." for a fetch) and the
///   pipeline is broken:
///   fill_pipeline() waits up to `drain` again for those bodies (and that fetch) to return
///   (then the pipeline is whole again, and a batch the fetch brought goes to on_failure,
///   never admitted) or throws PipelineStateError naming them; the pipeline's destructor
///   waits up to `drain` too, then ends the process with a fatal error naming them
///   (std::abort), since freeing the pipeline under a running body (or fetch) would corrupt
///   memory.
///   Kept apart from `retire`, so that a tiny retire deadline does not make a busy machine's
///   slow drain look like a stuck body.
/// - `hang_report`: a file each hang report is also appended to (see the field).
///
/// A hang report is the message of a PipelineTimeout: every unfinished (task, iteration) of
/// the in-flight iterations, one a line, with its lane and stream and what it does — not
/// released yet (waiting for the named dependencies, or for its period), queued on its lane
/// behind a named instance, holding its lane while it waits for a named dependency, waiting
/// for a sequencer turn (and which instance holds the current one), running its body, or
/// suspended in an await inside its body —, and for a slot deadline the device work (task,
/// iteration, stream) the slot waits for:
/// ```
/// iteration 1 did not retire within 200 ms; unfinished:
///   Load (iter 1) on lane 'io', stream 'memcpy': its body is suspended in an await (...)
///   Post (iter 1) on lane 'io', stream 'memcpy': queued on its lane behind Load (iter 1)
/// ```
///
/// Example:
/// ```
/// using namespace std::chrono_literals;
/// pipe.set_timeouts({.retire = 5s, .sequencer = 2s});
/// ```
struct EngineTimeouts {
  std::chrono::milliseconds retire{60'000};
  std::chrono::milliseconds sequencer{30'000};
  std::chrono::milliseconds check_interval{50};
  std::chrono::milliseconds drain{60'000};
  /// A file every hang report of the pipeline is appended to, besides the exception's message
  /// (e.g. for a process whose stderr is lost). Empty: the file the environment variable
  /// SWP_HANG_REPORT names, if set. A report that cannot be written says so in the message.
  std::string hang_report = {};
};

}  // namespace swp
