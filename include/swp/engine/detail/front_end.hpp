#pragma once
// FrontEnd: the typed pipeline's side of the seam with the untyped engine core.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>

#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/output_box.hpp"

namespace swp::detail {

/// What asking the source for an iteration's batch gave.
enum class Admission : std::uint8_t {
  admitted,  ///< the batch is in the context slot
  end,       ///< end of data
  pending,   ///< nothing yet: the source is being waited for (FrontEnd::source_ready)
};

/// What a typed pipeline (Pipeline<Ctx>) does for the engine core besides running task
/// routines (see TaskRoutine): it owns the contexts, so it admits batches into them and hands
/// retired ones to the user; it knows the value types, so it makes the output storage.
/// The core calls `admit`, `retire` and `end_source` on the thread that drives the pipeline
/// (progress(), next(), drain()), one at a time; `make_output` while it is being made;
/// `source_ready` and `source_idle` from any thread.
class FrontEnd {
 public:
  /// Takes the next batch into context slot `slot` as iteration `iter` of the run whose first
  /// iteration is `first_iter`, or says end of data, or pending (then source_ready() turns
  /// true, and the scheduler is notified, once asking again will not say pending). Throws
  /// what the source throws.
  virtual Admission admit(std::int64_t iter, std::int64_t first_iter, std::size_t slot) = 0;
  /// A pending source has its answer.
  [[nodiscard]] virtual bool source_ready() const noexcept = 0;
  /// Nothing of the source runs in the background (a run may end, the pipeline go).
  [[nodiscard]] virtual bool source_idle() const noexcept = 0;
  /// No more batches this run: admit says end (after a batch already fetched); a background
  /// wait for the source is cancelled.
  virtual void end_source() = 0;
  /// The run ended otherwise than at the end of its data (a failure, cancel(), drain(), the
  /// pipeline's destruction), once everything in flight was reported: batches the pipeline
  /// holds but never admitted (its own submission queue, a batch fetched in the background)
  /// are handed back, each with `why`. Throws what a callback threw, once all were handed.
  /// After a run that could not drain, a fetch that ignored cancellation may still bring a
  /// batch: the core calls this again once it returned (before a refill, or at the teardown).
  virtual void run_ended(const std::exception_ptr& why) = 0;
  /// Iteration `iter`, in slot `slot`, is done: retired (no `error`), or failed or cancelled
  /// (`error` says why; see FailurePolicy). The slot keeps its context until the next call.
  virtual void retire(std::int64_t iter, std::size_t slot, const std::exception_ptr& error) = 0;
  /// The context in slot `slot` belongs to an iteration that retired (or was reported) and
  /// whose device work completed: drop what it holds (its batch and fields), so a finished
  /// iteration keeps nothing alive. A context that cannot be reset stays as it is (the next
  /// admission into the slot overwrites it).
  virtual void release(std::size_t slot) noexcept = 0;
  /// The context object of slot `slot` (what the task routines run on); the same address for
  /// the pipeline's life.
  [[nodiscard]] virtual void* context(std::size_t slot) noexcept = 0;
  /// Storage for `task`'s value in one context slot; nullptr when it returns nothing.
  virtual std::unique_ptr<OutputBox> make_output(TaskIndex task) = 0;

 protected:
  ~FrontEnd() = default;
};

}  // namespace swp::detail
