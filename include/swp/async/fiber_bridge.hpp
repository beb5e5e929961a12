#pragma once
// Blocking task bodies on fibers: swp::blocking(fn), swp::on_fiber(fn), swp::blocking_await(x).

#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <boost/context/fiber.hpp>

#include "swp/async/co.hpp"

namespace swp {

namespace detail {

// What one fiber-run callable shares with the coroutine that drives it.
struct FiberRun {
  boost::context::fiber caller;  // where the fiber switches to when it parks or ends
  Co<void> pending;              // what the parked fiber waits for
  bool finished = false;
};

// The fiber running on this thread (set around every resume). Out of line: code on a fiber
// may continue on another thread, and an inlined thread-local address could be stale there.
FiberRun* current_fiber() noexcept;
FiberRun* exchange_current_fiber(FiberRun* run) noexcept;

// Stacks for fibers, recycled: a blocking body runs once per iteration, and mapping a fresh
// stack every time would cost more than most bodies.
class FiberStacks {
 public:
  explicit FiberStacks(std::size_t size) : size_(size) {}
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& stack) noexcept;

 private:
  std::size_t size_;
};

template <class A>
decltype(auto) awaiter_of(A&& a) {
  if constexpr (requires { std::forward<A>(a).operator co_await(); }) {
    return std::forward<A>(a).operator co_await();
  } else {
    return std::forward<A>(a);
  }
}

/// The type `co_await a` yields.
template <class A>
using await_result_t = decltype(awaiter_of(std::declval<A>()).await_resume());

template <class A, class Slot>
Co<void> await_into(A awaitable, Slot& slot, std::exception_ptr& error) {
  try {
    if constexpr (std::is_void_v<await_result_t<A>>) {
      co_await std::move(awaitable);
    } else if constexpr (std::is_reference_v<await_result_t<A>>) {
      slot = &(co_await std::move(awaitable));
    } else {
      slot.emplace(co_await std::move(awaitable));
    }
  } catch (...) {
    error = std::current_exception();
  }
}

}  // namespace detail

/// Default stack of a fiber: enough for ordinary library calls, not for deep recursion.
inline constexpr std::size_t default_fiber_stack = 256 * 1024;

/// Waits for `awaitable` (a Future, `ctx.get(handle)`, a Co...) from plain code running on a
/// fiber (inside `on_fiber` or a `blocking` body): the fiber parks, the thread is free to run
/// other lanes, and the fiber continues — possibly on another thread — when the awaitable
/// completes, with the awaitable's value or exception. Cancellation and deadlines are those of
/// the awaitable (a pipeline's waits are cancelled when the run fails).
/// Throws std::logic_error when called outside a fiber.
///
/// Example: `const Batch& b = swp::blocking_await(ctx.get(load));`
template <class A>
decltype(auto) blocking_await(A&& awaitable) {
  detail::FiberRun* run = detail::current_fiber();
  if (run == nullptr)
    throw std::logic_error(
        "swp::blocking_await called outside a fiber: wrap the callable with swp::blocking or "
        "swp::on_fiber, or co_await instead");
  using T = detail::await_result_t<A>;
  using Slot = std::conditional_t<std::is_reference_v<T>, std::remove_reference_t<T>*,
                                  std::optional<std::conditional_t<std::is_void_v<T>, int, T>>>;
  Slot slot{};
  std::exception_ptr error;
  run->pending = detail::await_into(std::forward<A>(awaitable), slot, error);
  run->caller = std::move(run->caller).resume();  // park; back here when it completed
  if (error) std::rethrow_exception(error);
  if constexpr (std::is_reference_v<T>) {
    return static_cast<T>(*slot);
  } else if constexpr (!std::is_void_v<T>) {
    return T(std::move(*slot));
  }
}

/// Runs the plain callable `fn()` on a fiber of its own and completes with its result (a
/// value, not a reference): a Co<R> that a coroutine awaits, or a pipeline runs as a task body. `fn` may block on swp
/// awaitables with `blocking_await`, which parks the fiber instead of the thread, so a
/// lane's thread keeps running other lanes meanwhile (a lane itself stays serial: its next
/// task waits for this one, as for any suspended coroutine task).
///
/// Completion: when `fn` returns; exceptions leaving `fn` are rethrown from the co_await.
/// The awaits inherit the awaiting coroutine's lane, stop signal and environment, so
/// `ctx.get(h)` works as in a coroutine body. Blocking on anything else (a mutex held
/// elsewhere, a std::future) still blocks the thread.
///
/// Example:
/// ```
/// swp::Co<int> total = swp::on_fiber([&] { return swp::blocking_await(f) + 1; });
/// ```
template <class F>
auto on_fiber(F fn, std::size_t stack_size = default_fiber_stack) -> Co<std::invoke_result_t<F&>> {
  using R = std::invoke_result_t<F&>;
  static_assert(!std::is_reference_v<R>,
                "swp::on_fiber: the callable returns a reference; return a value or a pointer");
  detail::FiberRun run;
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value;
  boost::context::fiber fiber(
      std::allocator_arg, detail::FiberStacks(stack_size),
      [&](boost::context::fiber&& caller) {
        run.caller = std::move(caller);
        try {
          if constexpr (std::is_void_v<R>) {
            fn();
          } else {
            value.emplace(fn());
          }
        } catch (...) {
          error = std::current_exception();
        }
        run.finished = true;
        return std::move(run.caller);
      });
  for (;;) {
    detail::FiberRun* outer = detail::exchange_current_fiber(&run);
    fiber = std::move(fiber).resume();
    detail::exchange_current_fiber(outer);
    if (run.finished) break;
    co_await std::move(run.pending);  // never throws: await_into keeps the error for the fiber
  }
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<R>) co_return std::move(*value);
}

/// Adapts a plain, blocking callable into a task body: `swp::blocking(fn)` is invocable with
/// the same arguments as `fn` (e.g. `(Ctx&)` or `(Ctx&, TaskScope&)`) and returns a Co that
/// runs `fn` with `on_fiber`. Inside, `blocking_await(ctx.get(h))` reads a dependency.
///
/// Example:
/// ```
/// plan.add("Decode", swp::blocking([load](Ctx& ctx) {
///   const Bytes& raw = swp::blocking_await(ctx.get(load));  // parks the fiber, not the lane
///   return decode(raw);                                        // the task's output
/// }));
/// ```
template <class F>
class Blocking {
 public:
  explicit Blocking(F fn, std::size_t stack_size = default_fiber_stack)
      : fn_(std::move(fn)), stack_size_(stack_size) {}

  template <class... Args>
    requires std::invocable<F&, Args&...>
  auto operator()(Args&... args) -> Co<std::invoke_result_t<F&, Args&...>> {
    // The body object outlives the task instance (a pipeline keeps its bodies), and so do
    // the arguments (the context and the scope).
    return on_fiber([this, &args...]() -> decltype(auto) { return std::invoke(fn_, args...); },
                    stack_size_);
  }

 private:
  F fn_;
  std::size_t stack_size_;
};

template <class F>
Blocking<F> blocking(F fn, std::size_t stack_size = default_fiber_stack) {
  return Blocking<F>(std::move(fn), stack_size);
}

}  // namespace swp
