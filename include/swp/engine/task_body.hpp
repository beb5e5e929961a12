#pragma once
// TaskBody: a task's body bound for one context type, and what can be bound (TaskFunction).

#include <concepts>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "swp/async/co.hpp"
#include "swp/engine/detail/engine_core.hpp"
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

template <class Ctx, class Fn>
Co<void> invoke_body(std::shared_ptr<Fn> fn, Ctx& ctx, TaskScope& scope, OutputBox* box) {
  using R = body_result_t<Ctx, Fn>;
  using V = body_value_t<Ctx, Fn>;
  if constexpr (CoValue<R>::is_co) {
    if constexpr (std::is_void_v<V>) {
      co_await call_body(*fn, ctx, scope);
    } else {
      static_cast<TypedBox<V>*>(box)->value.emplace(co_await call_body(*fn, ctx, scope));
    }
  } else if constexpr (std::is_void_v<V>) {
    call_body(*fn, ctx, scope);
  } else {
    static_cast<TypedBox<V>*>(box)->value.emplace(call_body(*fn, ctx, scope));
  }
}

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
/// once), the storage of its output value, and the context fields it declares it writes.
///
/// Completion: `run` returns a lazy Co that runs the callable when awaited and completes when
/// the callable (or the Co it returned) completed; a value it produces is stored in the box.
/// Errors: what the callable throws propagates from the Co (a pipeline reports it as TaskError).
/// Cancellation: the callable's awaits (`ctx.get`, futures) are woken with Cancelled when the
/// run fails.
///
/// Example:
/// ```
/// swp::TaskBody<Ctx> body([](Ctx& ctx) { return ctx.batch * 2; });              // Output<int>
/// swp::TaskBody<Ctx> declared(forward, swp::writes(&Fields::logits));           // shortcut replays logits
/// ```
template <class Ctx>
struct TaskBody {
  /// Binds `fn` (see TaskFunction).
  template <class Fn>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx>
  explicit TaskBody(Fn&& fn) : TaskBody(std::forward<Fn>(fn), Writes<Ctx>{}) {}

  /// Binds `fn`, declaring the context fields it writes (see swp::writes): a shortcut of the
  /// task replays them.
  template <class Fn, class Fields>
    requires TaskFunction<std::remove_cvref_t<Fn>, Ctx> && std::derived_from<Ctx, Fields>
  TaskBody(Fn&& fn, const Writes<Fields>& declared) {
    using F = std::remove_cvref_t<Fn>;
    using V = detail::body_value_t<Ctx, F>;
    auto shared = std::make_shared<F>(std::forward<Fn>(fn));
    run = [shared](Ctx& ctx, TaskScope& scope, detail::OutputBox* box) {
      return detail::invoke_body<Ctx, F>(shared, ctx, scope, box);
    };
    if constexpr (!std::is_void_v<V>) {
      make_box = [] { return std::make_unique<detail::TypedBox<V>>(); };
    }
    if constexpr (std::is_same_v<Fields, Ctx>) {
      writes = declared;
    } else {
      writes = declared.template rebind<Ctx>();
    }
  }

  /// The body on `ctx`: stores its value in `box` (a TypedBox of the value type made by
  /// `make_box`; unused when the body returns nothing).
  std::function<Co<void>(Ctx&, TaskScope&, detail::OutputBox*)> run;
  /// Output storage; empty when the body returns nothing.
  std::function<std::unique_ptr<detail::OutputBox>()> make_box;
  /// The context fields the body declares it writes (shortcut replay).
  Writes<Ctx> writes;
};

}  // namespace swp
