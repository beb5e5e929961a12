#pragma once
// TaskBody: a task's body bound for one context type, and what can be bound (TaskFunction).

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/async/detail/erased_co.hpp"
#include "swp/engine/detail/output_box.hpp"
#include "swp/engine/detail/task_routine.hpp"
#include "swp/engine/shortcut.hpp"
#include "swp/engine/task_scope.hpp"

namespace swp {

namespace detail {

template <class T>
struct CoValue {
  static constexpr bool is_co = false;
  using type = T;
};
template <class T>
struct CoValue<Co<T>> {
  static constexpr bool is_co = true;
  using type = T;
};

template <class Ctx, class Fn>
decltype(auto) call_body(Fn& fn, Ctx& ctx, TaskScope& scope) {
  if constexpr (std::is_invocable_v<Fn&, Ctx&, TaskScope&>) {
    return fn(ctx, scope);
  } else {
    return fn(ctx);
  }
}

template <class Ctx, class Fn>
using body_result_t =
    typename std::conditional_t<std::is_invocable_v<Fn&, Ctx&, TaskScope&>,
                                std::invoke_result<Fn&, Ctx&, TaskScope&>,
                                std::invoke_result<Fn&, Ctx&>>::type;

/// The value type a body produces (void for none).
template <class Ctx, class Fn>
using body_value_t = typename CoValue<body_result_t<Ctx, Fn>>::type;

/// A body's callable bound for contexts `Ctx`, shared by every copy of the TaskBody (and so by
/// every pipeline made from one plan): it is the task's routine in each of those pipelines
/// (they hand it their slot's context), and it makes the storage of its value.
template <class Ctx>
class BodyCall : public TaskRoutine {
 public:
  /// Storage for the value in one context slot; nullptr when the body returns nothing.
  [[nodiscard]] virtual std::unique_ptr<OutputBox> make_output() const = 0;
  /// Whether the body produces a value.
  [[nodiscard]] virtual bool returns_value() const noexcept = 0;
};

/// The body `Fn` as a routine: it calls the callable directly on the slot's context, so a body
/// that does not suspend runs without any coroutine frame; a coroutine body's own Co is what
/// the core starts, its value routed straight into the output slot.
template <class Ctx, class Fn>
class BoundBody final : public BodyCall<Ctx> {
  using Value = body_value_t<Ctx, Fn>;

 public:
  template <class F>
  explicit BoundBody(F&& fn) : fn_(std::forward<F>(fn)) {}

  ReleasedCo run(void* context, TaskScope& scope, OutputBox* output) const override {
    using R = body_result_t<Ctx, Fn>;
    Ctx& ctx = *static_cast<Ctx*>(context);
    if constexpr (CoValue<R>::is_co) {
      R co = call_body(fn_, ctx, scope);
      if constexpr (!std::is_void_v<Value>)
        co.deliver_to(&static_cast<TypedBox<Value>*>(output)->value);
      return ErasedCo(std::move(co)).release();
    } else if constexpr (std::is_void_v<Value>) {
      call_body(fn_, ctx, scope);
      return {};
    } else {
      static_cast<TypedBox<Value>*>(output)->value.emplace(call_body(fn_, ctx, scope));
      return {};
    }
  }
  [[nodiscard]] std::unique_ptr<OutputBox> make_output() const override {
    if constexpr (std::is_void_v<Value>) {
      return nullptr;
    } else {
      return std::make_unique<TypedBox<Value>>();
    }
  }
  [[nodiscard]] bool returns_value() const noexcept override { return !std::is_void_v<Value>; }

 private:
  // Called through a const routine: the callable is the user's, shared by every pipeline made
  // from the plan (as it was when each held a pointer to it), and may keep state.
  mutable Fn fn_;
};

}  // namespace detail

/// Something a task of contexts `Ctx` can run: `fn(ctx)` or `fn(ctx, scope)`, returning
/// `Co<T>`, `Co<void>`, a plain `T` or nothing. A callable for another context type is not one,
/// so binding it does not compile.
template <class Fn, class Ctx>
concept TaskFunction = std::is_invocable_v<Fn&, Ctx&> || std::is_invocable_v<Fn&, Ctx&, TaskScope&>;

/// The value a task function produces for contexts `Ctx`: `T` for `Co<T>` or `T`, void for none.
template <class Fn, class Ctx>
  requires TaskFunction<Fn, Ctx>
using task_value_t = detail::body_value_t<Ctx, std::remove_cvref_t<Fn>>;

/// A task body bound for contexts of type `Ctx`, as a `swp::Plan<Ctx>` stores it per task and a
/// pipeline runs it: the callable (shared by every copy of the body, so state it keeps is kept
/// once) and the context fields it declares it writes.
///
/// Completion: a pipeline calls the callable directly on the instance's context, on its lane:
/// a plain body completes when it returns (no coroutine frame is made for it); a coroutine body
/// runs as its own Co and completes when that does. A value it produces is stored in the
/// task's output slot, where `ctx.get` reads it.
/// Errors: what the callable throws propagates (a pipeline reports it as TaskError).
/// Cancellation: the callable's awaits (`ctx.get`, futures) are woken with Cancelled when the
/// run fails.
///
/// Example:
/// ```
/// swp::TaskBody<Ctx> body([](Ctx& ctx) { return ctx.batch * 2; });              // Output<int>
/// swp::TaskBody<Ctx> declared(forward, swp::writes(&Fields::logits));           // shortcut replays logits
/// ```
template <class Ctx>
class TaskBody {
 public:
  /// Binds `fn` (see TaskFunction).
  template <class Fn>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx>
  explicit TaskBody(Fn&& fn) : TaskBody(std::forward<Fn>(fn), Writes<Ctx>{}) {}

  /// Binds `fn`, declaring the context fields it writes (see swp::writes): a shortcut of the
  /// task replays them.
  template <class Fn, class Fields>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx> && std::derived_from<Ctx, Fields>
  TaskBody(Fn&& fn, const Writes<Fields>& declared)
      : call_(std::make_shared<const detail::BoundBody<Ctx, std::remove_cvref_t<Fn>>>(
            std::forward<Fn>(fn))) {
    if constexpr (std::is_same_v<Fields, Ctx>) {
      writes = declared;
    } else {
      writes = declared.template rebind<Ctx>();
    }
  }

  /// Whether the body produces a value (its task's handle is then an Output<T>, T not void).
  [[nodiscard]] bool returns_value() const noexcept { return call_->returns_value(); }

  /// The typed callable, which is the task's routine in a pipeline.
  [[nodiscard]] const detail::BodyCall<Ctx>& call() const noexcept { return *call_; }

  /// The context fields the body declares it writes (shortcut replay).
  Writes<Ctx> writes;

 private:
  std::shared_ptr<const detail::BodyCall<Ctx>> call_;
};

}  // namespace swp
