#pragma once
// FrontEnd: the typed pipeline's side of the seam with the untyped engine core.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/output_box.hpp"

namespace swp::detail {

/// What a typed pipeline (Pipeline<Ctx>) does for the engine core besides running task
/// routines (see TaskRoutine): it owns the contexts, so it admits batches into them and hands
/// retired ones to the user; it knows the value types, so it makes the output storage.
/// The core calls `admit` and `retire` on the thread that drives the pipeline (progress(),
/// next()), one at a time; `make_output` while it is being made.
class FrontEnd {
 public:
  /// Takes the next batch into context slot `slot` as iteration `iter`; false at end of data.
  /// Throws what the source throws.
  virtual bool admit(std::int64_t iter, std::size_t slot) = 0;
  /// Iteration `iter` retired from slot `slot`, which is reused after this returns.
  virtual void retire(std::int64_t iter, std::size_t slot) = 0;
  /// Storage for `task`'s value in one context slot; nullptr when it returns nothing.
  virtual std::unique_ptr<OutputBox> make_output(TaskIndex task) = 0;

 protected:
  ~FrontEnd() = default;
};

}  // namespace swp::detail
