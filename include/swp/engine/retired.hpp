#pragma once
// Retired<Ctx>: what progress(), next() and async_progress() complete with — the retired
// iteration's number, its context and its tasks' values.

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "swp/engine/detail/engine_handle.hpp"
#include "swp/engine/detail/output_box.hpp"
#include "swp/engine/detail/pipeline_context.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/iter_context.hpp"

namespace swp {

template <detail::PipelineContext Ctx>
class Pipeline;

/// The iteration a pipeline retired last: its number, its context (the batch and the fields
/// its tasks wrote) and the values its tasks returned. A handle, not a copy: it refers to the
/// pipeline's context slot, which the pipeline keeps intact until its next retirement — valid
/// until the next progress(), next(), async_progress(), drain(), run_one_serial_iter() or
/// the pipeline's destruction. Copy out what must live longer.
///
/// Under FailurePolicy::skip an iteration may also come back failed (failed(), error()); its
/// context then holds what its tasks wrote before the failure, and get() rethrows the error.
/// Its number is iter(); it does not convert to an integer, so a handle is never taken for an
/// index by accident (`pipe.iterations(source)` yields the numbers).
///
/// Example:
/// ```
/// auto loss = plan.add("Loss", compute_loss, {.stage = 2});   // a body returning float
/// while (auto retired = co_await pipe.next()) {
///   report(retired->iter(), retired->context().batch.id, retired->get(loss));
/// }
/// ```
template <class Ctx>
class Retired {
 public:
  /// The iteration's number (continuing across runs, see Pipeline::fill_pipeline).
  [[nodiscard]] std::int64_t iter() const noexcept { return iter_; }

  /// The iteration's context, as its tasks left it (with retire_after_device, also after its
  /// device work completed).
  [[nodiscard]] const Ctx& context() const noexcept { return *ctx_; }

  /// Whether the iteration failed (only under FailurePolicy::skip: otherwise a failure ends
  /// the run and surfaces as an exception), and why: a TaskError naming the task.
  [[nodiscard]] bool failed() const noexcept { return error_ != nullptr; }
  [[nodiscard]] const std::exception_ptr& error() const noexcept { return error_; }

  /// The value `task` returned in this iteration.
  /// Errors: rethrows the iteration's error when it failed; std::invalid_argument when `task`
  /// is not a task of this pipeline's plan; PipelineStateError when the task produced no
  /// value of type T (a shortcut replay keeps its cached value, so it has one).
  template <class T>
  [[nodiscard]] const T& get(const Output<T>& task) const {
    if (!detail::is_task_of(*core_, task))
      throw std::invalid_argument("Retired::get('" + task.name +
                                  "'): not a task of this pipeline's plan");
    if (error_) std::rethrow_exception(error_);
    const auto* box = detail::TypedBox<T>::of(detail::output_box(*core_, slot_, task.index));
    if (box == nullptr || !box->value)
      throw PipelineStateError("Retired::get('" + task.name + "'): iteration " +
                               std::to_string(iter_) +
                               " has no value of the requested type from that task");
    return *box->value;
  }

 private:
  // Made by the pipeline only (Pipeline::retired): the core is an implementation type.
  template <detail::PipelineContext C>
  friend class Pipeline;
  Retired(const detail::EngineCore& core, const Ctx& ctx, std::int64_t iter, std::size_t slot,
          std::exception_ptr error) noexcept
      : core_(&core), ctx_(&ctx), iter_(iter), slot_(slot), error_(std::move(error)) {}

  const detail::EngineCore* core_;
  const Ctx* ctx_;
  std::int64_t iter_;
  std::size_t slot_;
  std::exception_ptr error_;
};

}  // namespace swp
