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

#include "swp/async/co.hpp"

namespace swp {

/// Default usable stack of a fiber: enough for ordinary library calls, not for deep recursion
/// or big local buffers (pass a larger size to on_fiber / blocking for those).
inline constexpr std::size_t default_fiber_stack = 256 * 1024;

/// The smallest stack on_fiber / blocking accept.
inline constexpr std::size_t min_fiber_stack = 16 * 1024;

namespace detail {

/// One fiber: a guarded stack and the context switches into and out of it. Every call into
/// Boost.Context is out of line, in libswp: inline code that switched stacks itself would make
/// each program using swp::blocking link Boost.Context directly (its pkg-config line would not).
class FiberRun {
 public:
  using Body = void (*)(void* arg);

  /// A fiber that will run `body(arg)` on a stack of `stack_size` usable bytes (see on_fiber);
  /// nothing runs before the first resume(). Throws std::invalid_argument for a stack below
  /// min_fiber_stack, std::system_error when no stack can be mapped.
  FiberRun(Body body, void* arg, std::size_t stack_size);
  /// A fiber still parked is unwound: its frames' destructors run (an exception no body can
  /// catch as std::exception travels up its stack from `park()`) and its stack returns to the
  /// pool. A fiber never resumed ends without running `body`.
  ~FiberRun();
  FiberRun(const FiberRun&) = delete;
  FiberRun& operator=(const FiberRun&) = delete;

  /// From the driving coroutine: runs the fiber on this thread until it parks or `body`
  /// returns; true when it returned. `body` must catch its own exceptions.
  bool resume();
  /// From inside the fiber: switches back to the driver; returns when the driver resumes the
  /// fiber again, possibly on another thread.
  void park();

  Co<void> pending;  ///< what the parked fiber waits for; the driver awaits it

 private:
  void run_on_fiber();

  Body body_;
  void* arg_;
  bool finished_ = false;
  bool unwinding_ = false;  // set by the destructor: park() throws instead of returning
  // The two boost::context::fiber handles (one pointer each, checked in fiber_bridge.cpp),
  // kept as bytes so this header needs no Boost.Context header: the fiber as the driver sees
  // it, and the driver as the fiber sees it.
  alignas(void*) unsigned char fiber_[sizeof(void*)];
  alignas(void*) unsigned char caller_[sizeof(void*)];
  // Where the fiber's and the driver's stacks lie, for AddressSanitizer's stack-switch
  // annotations (used by sanitizer builds of libswp; the layout is the same in every build).
  const void* fiber_stack_ = nullptr;
  std::size_t fiber_stack_size_ = 0;
  const void* driver_stack_ = nullptr;
  std::size_t driver_stack_size_ = 0;
};

/// `requested` rounded up to whole pages; throws std::invalid_argument naming the size when
/// it is below min_fiber_stack.
std::size_t usable_fiber_stack(std::size_t requested);

/// The fiber running on this thread (set around every resume). Out of line: code on a fiber
/// may continue on another thread, and an inlined thread-local address could be stale there.
FiberRun* current_fiber() noexcept;

/// Called in a `catch (...)` on a fiber: rethrows the exception being handled when it is the
/// unwinding of a destroyed fiber (which must reach the bottom of the fiber's stack).
void rethrow_if_fiber_unwind();

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

// One on_fiber call: the callable and its outcome. They live outside the coroutine frame
// (run_on_fiber's frame holds only this base): GCC's -Wsubobject-linkage flags a coroutine
// frame declared in a header that holds a type with no linkage, which every lambda of an
// anonymous namespace is, and users' -Werror builds would fail on it.
template <class R>
class FiberOutcome {
 public:
  virtual ~FiberOutcome() = default;
  /// On the fiber: runs the callable, keeping its value or exception (all but the fiber's
  /// own unwinding, which leaves run()).
  virtual void run() = 0;
  /// After run(): the value, or the exception rethrown.
  R take() {
    if (error_) std::rethrow_exception(error_);
    if constexpr (!std::is_void_v<R>) return std::move(*value_);
  }

 protected:
  // The fiber's own unwinding (a destroyed, parked fiber) must reach the bottom of its stack.
  template <class Fn>
  void capture(Fn& fn) {
    try {
      if constexpr (std::is_void_v<R>) {
        fn();
      } else {
        value_.emplace(fn());
      }
    } catch (...) {
      rethrow_if_fiber_unwind();
      error_ = std::current_exception();
    }
  }

 private:
  std::exception_ptr error_;
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value_;
};

template <class F, class R>
class FiberCall final : public FiberOutcome<R> {
 public:
  explicit FiberCall(F fn) : fn_(std::move(fn)) {}
  void run() override { this->capture(fn_); }

 private:
  F fn_;
};

template <class R>
void run_outcome(void* call) {
  static_cast<FiberOutcome<R>*>(call)->run();
}

template <class R>
Co<R> run_on_fiber(std::unique_ptr<FiberOutcome<R>> call, std::size_t stack_size) {
  FiberRun run(&run_outcome<R>, call.get(), stack_size);
  while (!run.resume())
    co_await std::move(run.pending);  // never throws: await_into keeps the error for the fiber
  if constexpr (std::is_void_v<R>) {
    call->take();
  } else {
    co_return call->take();
  }
}

}  // namespace detail


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
  run->park();  // back here when it completed
  if (error) std::rethrow_exception(error);
  if constexpr (std::is_reference_v<T>) {
    return static_cast<T>(*slot);
  } else if constexpr (!std::is_void_v<T>) {
    return T(std::move(*slot));
  }
}

/// Runs the plain callable `fn()` on a fiber of its own and completes with its result (a
/// value, not a reference): a Co<R> that a coroutine awaits, or a pipeline runs as a task
/// body. `fn` may block on swp awaitables with `blocking_await`, which parks the fiber instead
/// of the thread, so a lane's thread keeps running other lanes meanwhile (a lane itself stays
/// serial: its next task waits for this one, as for any suspended coroutine task).
///
/// Stack: `stack_size` usable bytes (rounded up to whole pages; at least min_fiber_stack),
/// with an inaccessible guard page below, so a body that overflows it (deep recursion, a big
/// local buffer) dies with SIGSEGV at once instead of silently overwriting other memory.
/// Stacks are mapped on first use and recycled per size.
///
/// Completion: when `fn` returns; exceptions leaving `fn` are rethrown from the co_await, as
/// are std::invalid_argument for a `stack_size` below min_fiber_stack and std::system_error
/// when no stack can be mapped. The awaits inherit the awaiting coroutine's lane, stop signal
/// and environment, so `ctx.get(h)` works as in a coroutine body. Blocking on anything else (a
/// mutex held elsewhere, a std::future) still blocks the thread.
/// Cancellation: that of the awaitables `fn` waits for. Destroying the Co while the fiber is
/// parked unwinds the fiber's frames: the parked `blocking_await` throws an exception that is
/// no std::exception (a `catch (...)` in `fn` that swallows it lets `fn` go on, without
/// waiting: every later `blocking_await` throws it again). That is supported while the fiber
/// waits on a Future, a Channel send or receive or a sequencer turn that does not complete
/// concurrently (its waiter is unlinked); for any other awaitable, end the wait first (see Co:
/// destroying a suspended Co).
///
/// Example:
/// ```
/// swp::Co<int> total = swp::on_fiber([&] { return swp::blocking_await(f) + 1; });
/// swp::Co<void> deep = swp::on_fiber([] { recurse(10000); }, 8 << 20);  // an 8 MiB stack
/// ```
template <class F>
auto on_fiber(F fn, std::size_t stack_size = default_fiber_stack) -> Co<std::invoke_result_t<F&>> {
  using R = std::invoke_result_t<F&>;
  static_assert(!std::is_reference_v<R>,
                "swp::on_fiber: the callable returns a reference; return a value or a pointer");
  return detail::run_on_fiber<R>(std::make_unique<detail::FiberCall<F, R>>(std::move(fn)),
                                 stack_size);
}

/// Adapts a plain, blocking callable into a task body: `swp::blocking(fn)` is invocable with
/// the same arguments as `fn` (e.g. `(Ctx&)` or `(Ctx&, TaskScope&)`) and returns a Co that
/// runs `fn` with `on_fiber` on a guarded stack of `stack_size` usable bytes (default
/// default_fiber_stack; completion, errors and cancellation as on_fiber). Inside,
/// `blocking_await(ctx.get(h))` reads a dependency.
///
/// Example:
/// ```
/// plan.add("Decode", swp::blocking([load](Ctx& ctx) {
///   const Bytes& raw = swp::blocking_await(ctx.get(load));  // parks the fiber, not the lane
///   return decode(raw);                                        // the task's output
/// }));
/// plan.add("Parse", swp::blocking(parse_recursively, 4 << 20));  // a 4 MiB stack
/// ```
template <class F>
class Blocking {
 public:
  /// Throws std::invalid_argument for a `stack_size` below min_fiber_stack.
  explicit Blocking(F fn, std::size_t stack_size = default_fiber_stack)
      : fn_(std::move(fn)), stack_size_(detail::usable_fiber_stack(stack_size)) {}

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
