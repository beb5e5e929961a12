#pragma once
// Co<T>: the lazy coroutine task type every swp task body and engine routine is written in.

#include <atomic>
#include <concepts>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "swp/async/cancelled.hpp"
#include "swp/async/detail/frame_allocator.hpp"
#include "swp/async/resumer.hpp"

namespace swp {

template <class T = void>
class Co;

/// What the owner of a root coroutine lends everything the coroutine awaits: the engines
/// derive their task instance from it, so `ctx.get(...)` deep inside a task body knows which
/// task reads. Other owners lend nothing (nullptr).
class CoEnvironment {
 protected:
  CoEnvironment() = default;
  ~CoEnvironment() = default;
};

namespace detail {

/// What every Co promise shares: the awaiting parent, the exception, the Resumer (inherited by
/// children, so everything a task awaits resumes on the task's lane) and, for a root coroutine,
/// the completion callback.
class CoPromiseBase {
 public:
  /// The error is the promise's own: a callback that keeps it moves it out (`result()` of a
  /// `start`ed Co then has none to rethrow). Then the finishing thread holds no reference once
  /// the callback returns, not even through the frame a detached Co destroys right after, so a
  /// waiter the callback wakes may drop the last one (a reference released on the finishing
  /// thread after the wake-up would free the exception there, behind reference counts
  /// ThreadSanitizer cannot see in an uninstrumented libstdc++). A callback that copies it
  /// leaves one reference to the frame.
  using Completion = void (*)(void* context, std::exception_ptr& error) noexcept;

  struct FinalAwaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }

    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) noexcept {
      CoPromiseBase& p = self.promise();
      if (p.continuation_) {
        // Second to arrive continues the parent: if the parent is still inside its
        // await_suspend (we completed synchronously) it simply does not suspend.
        if (p.handoff_.exchange(true, std::memory_order_acq_rel)) return p.continuation_;
        return std::noop_coroutine();
      }
      const bool detached = p.detached_;
      if (p.completion_ != nullptr) p.completion_(p.completion_context_, p.exception_);
      // A detached root frees itself here, on the thread that finished it: nobody else may
      // destroy a frame whose final step could still be running.
      if (detached) self.destroy();
      return std::noop_coroutine();
    }

    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  static void* operator new(std::size_t size) { return frame_allocate(size); }
  static void operator delete(void* frame, std::size_t size) noexcept {
    frame_deallocate(frame, size);
  }

  [[nodiscard]] Resumer* resumer() const noexcept { return resumer_; }
  void set_resumer(Resumer* resumer) noexcept { resumer_ = resumer; }

  /// The stop signal cancellable awaits of this coroutine listen to (inherited by children).
  [[nodiscard]] const StopSignal* stop_signal() const noexcept { return stop_; }
  void set_stop_signal(const StopSignal* stop) noexcept { stop_ = stop; }

  /// What the owner of the root coroutine lent it (see CoEnvironment), inherited by children.
  [[nodiscard]] CoEnvironment* environment() const noexcept { return env_; }
  void set_environment(CoEnvironment* env) noexcept { env_ = env; }

  void set_continuation(std::coroutine_handle<> parent, const CoPromiseBase* parent_promise) noexcept {
    continuation_ = parent;
    if (parent_promise != nullptr) {
      resumer_ = parent_promise->resumer_;
      stop_ = parent_promise->stop_;
      env_ = parent_promise->env_;
    }
  }

  void set_completion(Completion completion, void* context) noexcept {
    completion_ = completion;
    completion_context_ = context;
  }

  void rethrow_if_failed() const {
    if (exception_) std::rethrow_exception(exception_);
  }

  void set_detached() noexcept { detached_ = true; }

  /// Called by the parent after starting this child: true when the child already finished
  /// (the parent continues without suspending), false when the child will resume the parent.
  bool finished_before_parent_suspended() noexcept {
    return handoff_.exchange(true, std::memory_order_acq_rel);
  }

 private:
  std::coroutine_handle<> continuation_;
  std::exception_ptr exception_;
  Resumer* resumer_ = nullptr;
  const StopSignal* stop_ = nullptr;
  CoEnvironment* env_ = nullptr;
  Completion completion_ = nullptr;
  void* completion_context_ = nullptr;
  // Child/parent hand-off: whoever sets it second continues the parent. This keeps the stack
  // flat for children that complete synchronously, even where the compiler does not turn
  // symmetric transfer into a tail call (g++ at -O0/-O1 and under sanitizers).
  std::atomic<bool> handoff_{false};
  bool detached_ = false;
};

/// The swp promise behind `h`, or nullptr for a foreign coroutine.
template <class Promise>
const CoPromiseBase* co_promise_of(std::coroutine_handle<Promise> h) noexcept {
  if constexpr (std::derived_from<Promise, CoPromiseBase>) {
    return &h.promise();
  } else {
    return nullptr;
  }
}

/// The Resumer of the coroutine behind `h`, if it is an swp coroutine.
template <class Promise>
Resumer* resumer_of(std::coroutine_handle<Promise> h) noexcept {
  if constexpr (std::derived_from<Promise, CoPromiseBase>) {
    return h.promise().resumer();
  } else {
    return nullptr;
  }
}

/// The stop signal of the coroutine behind `h`, if it is an swp coroutine that has one.
template <class Promise>
const StopSignal* stop_signal_of(std::coroutine_handle<Promise> h) noexcept {
  if constexpr (std::derived_from<Promise, CoPromiseBase>) {
    return h.promise().stop_signal();
  } else {
    return nullptr;
  }
}

template <class T>
class CoPromise : public CoPromiseBase {
 public:
  Co<T> get_return_object() noexcept;

  template <class U>
    requires std::convertible_to<U&&, T>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    (sink_ != nullptr ? *sink_ : value_).emplace(std::forward<U>(value));
  }

  T take() {
    rethrow_if_failed();
    return std::move(*value_);
  }

  /// The value goes straight to `*sink` instead (see Co::deliver_to).
  void set_sink(std::optional<T>* sink) noexcept { sink_ = sink; }

 private:
  std::optional<T> value_;
  std::optional<T>* sink_ = nullptr;
};

template <>
class CoPromise<void> : public CoPromiseBase {
 public:
  Co<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void take() const { rethrow_if_failed(); }
};

}  // namespace detail

/// A lazy coroutine producing a `T` (or nothing).
///
/// Completion: nothing runs until the Co is awaited (`co_await std::move(co)`, or `co_await
/// make_co()` directly) or started as a root; the awaiting coroutine continues when the body
/// returns — without suspending at all when the body completed synchronously, so long loops of
/// awaits never grow the stack. Errors: an exception leaving the body is rethrown from the
/// `co_await`. Cancellation: a Co has none of its own; it ends when what it awaits is cancelled.
/// Frames come from a thread-local recycling allocator. Move-only; destroying an unstarted or
/// finished Co frees its frame. Destroying a suspended Co frees its frame and those of the Cos
/// it awaits; it is supported while the innermost one waits on a Future, a Channel's send or
/// receive or a SubmissionSequencer turn (directly, or on an on_fiber whose fiber is parked in
/// `blocking_await` on one): the awaiter unlinks itself, so completing the wait later resumes
/// nothing (a channel serves the next waiter instead) — provided the wait does not complete
/// concurrently with the destruction. Any other wait (a timer) must end first (complete, or be
/// cancelled through its StopSignal), or its completion resumes a freed frame.
///
/// Example:
/// ```
/// swp::Co<int> answer() { co_return 42; }
/// swp::Co<void> caller() { int x = co_await answer(); }
/// ```
template <class T>
class [[nodiscard]] Co {
 public:
  using promise_type = detail::CoPromise<T>;
  using handle_type = std::coroutine_handle<promise_type>;
  using value_type = T;

  Co() noexcept = default;
  explicit Co(handle_type h) noexcept : h_(h) {}
  Co(Co&& other) noexcept : h_(std::exchange(other.h_, {})) {}
  Co& operator=(Co&& other) noexcept {
    if (this != &other) {
      reset();
      h_ = std::exchange(other.h_, {});
    }
    return *this;
  }
  Co(const Co&) = delete;
  Co& operator=(const Co&) = delete;
  ~Co() { reset(); }

  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }
  [[nodiscard]] bool done() const noexcept { return h_ && h_.done(); }

  /// Awaiting a Co starts it; the awaiting coroutine continues when it returns.
  class Awaiter {
   public:
    explicit Awaiter(handle_type h) noexcept : h_(h) {}
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class Parent>
    bool await_suspend(std::coroutine_handle<Parent> parent) noexcept {
      h_.promise().set_continuation(parent, detail::co_promise_of(parent));
      h_.resume();  // runs the child up to its first suspension or to its end
      return !h_.promise().finished_before_parent_suspended();
    }
    T await_resume() { return h_.promise().take(); }

   private:
    handle_type h_;
  };

  Awaiter operator co_await() && noexcept { return Awaiter{h_}; }

  /// Starts this Co as a root coroutine, resuming through `resumer`; `completion(context,
  /// error)` is called when it finishes (error empty on success), on the thread that ran its
  /// last step. The Co must stay alive until then; read the result with `result()`.
  /// Cancellable awaits inside it (futures, sequencer turns) listen to `*stop` when given;
  /// the signal must outlive the coroutine.
  void start(Resumer* resumer, detail::CoPromiseBase::Completion completion, void* context,
             const StopSignal* stop = nullptr, CoEnvironment* environment = nullptr) noexcept {
    h_.promise().set_resumer(resumer);
    h_.promise().set_stop_signal(stop);
    h_.promise().set_environment(environment);
    h_.promise().set_completion(completion, context);
    h_.resume();
  }

  /// Like `start`, but the Co gives up its frame, which destroys itself right after calling
  /// `completion` (the error is the only result). This Co becomes empty. Use it when the thread
  /// that learns about the completion may tear down the owner of the Co.
  void start_detached(Resumer* resumer, detail::CoPromiseBase::Completion completion,
                      void* context, const StopSignal* stop = nullptr,
                      CoEnvironment* environment = nullptr) noexcept {
    handle_type h = std::exchange(h_, {});
    h.promise().set_detached();
    h.promise().set_resumer(resumer);
    h.promise().set_stop_signal(stop);
    h.promise().set_environment(environment);
    h.promise().set_completion(completion, context);
    h.resume();
  }

  /// The value of a finished root Co; rethrows its exception.
  T result() { return h_.promise().take(); }

  /// Makes the body store its value in `*sink` (emplaced by `co_return`) instead of keeping
  /// it for the awaiter: how a task's value lands in its output slot without a wrapping
  /// coroutine. Call before the Co starts; the sink must outlive it; awaiting it or reading
  /// `result()` afterwards is an error (start it as a root, see detail::ErasedCo).
  void deliver_to(std::optional<T>* sink) noexcept
    requires(!std::is_void_v<T>)
  {
    h_.promise().set_sink(sink);
  }

  /// Gives up the frame (this Co becomes empty): for detail::ErasedCo.
  [[nodiscard]] handle_type release() noexcept { return std::exchange(h_, {}); }

 private:
  void reset() noexcept {
    if (h_) h_.destroy();
    h_ = {};
  }

  handle_type h_;
};

namespace detail {
template <class T>
Co<T> CoPromise<T>::get_return_object() noexcept {
  return Co<T>(Co<T>::handle_type::from_promise(*this));
}
inline Co<void> CoPromise<void>::get_return_object() noexcept {
  return Co<void>(Co<void>::handle_type::from_promise(*this));
}
}  // namespace detail

}  // namespace swp
