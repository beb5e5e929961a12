#pragma once
// IterContext and Output<T>: the per-iteration context and typed task outputs.

#include <coroutine>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>

#include "swp/async/co.hpp"
#include "swp/core/task_ref.hpp"
#include "swp/engine/detail/engine_handle.hpp"
#include "swp/engine/detail/output_box.hpp"
#include "swp/engine/errors.hpp"

namespace swp {

/// Handle of a task whose body returns a `T`; pass it to `ctx.get` to read that value.
/// Usable wherever a TaskHandle / TaskRef is (dependency lists).
template <class T>
struct Output : TaskHandle {
  using value_type = T;
};

struct NoFields {};

namespace detail {

/// Awaiter of `ctx.get(producer)`: checks that the running task declared `producer` (a read,
/// swp::reads, or an intra-iteration dependency) and yields the producer's value of this
/// iteration.
template <class T>
class GetAwaiter {
 public:
  explicit GetAwaiter(const Output<T>& producer) : producer_(producer) {}

  [[nodiscard]] bool await_ready() const noexcept { return false; }

  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    const CoPromiseBase* promise = co_promise_of(h);
    // Only the engines lend an environment to task coroutines: their instance. The task's
    // routine awaited every declared dependency (both phases) before its body started, so
    // the producer has completed: read it without suspending.
    read_ = read_output(promise != nullptr ? promise->environment() : nullptr, producer_);
    return false;
  }

  const T& await_resume() const {
    if (read_.error != nullptr) std::rethrow_exception(*read_.error);
    const auto* box = TypedBox<T>::of(read_.box);
    if (box == nullptr || !box->value)
      throw PipelineStateError("ctx.get('" + producer_.name + "'): the task produced no value " +
                               "of the requested type");
    return *box->value;
  }

 private:
  Output<T> producer_;
  OutputRead read_;
};

}  // namespace detail

/// The per-iteration context every task of one iteration shares (seed IterContext): the batch
/// from the data source, the iteration index, and the user's fields (`Fields`, a struct the
/// context derives from, reset to its default state for every iteration).
///
/// Example:
/// ```
/// struct Fields { std::vector<float> x_gpu; float loss = 0; };
/// using Ctx = swp::IterContext<Batch, Fields>;
/// ... [](Ctx& ctx) -> swp::Co<void> { ctx.loss = compute(ctx.batch, ctx.x_gpu); co_return; }
/// ```
template <class Batch, class Fields = NoFields>
struct IterContext : Fields {
  using batch_type = Batch;

  Batch batch{};
  /// The iteration's number. Numbers go on across runs (fill_pipeline after drain(), a
  /// failure, or an ended source): a pipeline never reuses one.
  std::int64_t iter_idx = -1;
  /// The first iteration of the run this one belongs to: it has no iteration before it, so
  /// the plan's inter-iteration dependencies do not apply to it.
  std::int64_t first_iter = 0;

  /// Whether an iteration of the same run came before this one (what inter-iteration
  /// dependencies wait for). Example: `if (ctx.has_previous()) use(state_of(ctx.iter_idx - 1));`
  [[nodiscard]] bool has_previous() const noexcept { return iter_idx > first_iter; }

  /// Awaits the output of `producer` in this iteration and yields `const T&` (valid until the
  /// slot is reused: while the iteration is in flight).
  /// The running task must declare the read — `plan.add(name, fn, schedule,
  /// swp::reads(producer))`, or {task, producer} in `intra_iter_deps` — so the plan orders the
  /// producer first (and its stream); otherwise it throws UndeclaredDependency naming both
  /// tasks. Rethrows the producer's error. Cancellation: the producer finished before the body
  /// started (a declared dependency), so the await never suspends.
  ///
  /// Example:
  /// ```
  /// auto h2d = plan.add("H2D", copy_batch, {.stage = 0});
  /// plan.add("Forward", [h2d](Ctx& ctx) -> swp::Co<void> {
  ///   const Tensor& x = co_await ctx.get(h2d);
  ///   ...
  /// }, {.stage = 1}, swp::reads(h2d));
  /// ```
  template <class T>
  [[nodiscard]] detail::GetAwaiter<T> get(const Output<T>& producer) const {
    return detail::GetAwaiter<T>(producer);
  }
};

}  // namespace swp
