#pragma once
// ErasedCo: a Co<T> of any T whose value, if any, goes to a sink — what an engine starts for a
// task body without knowing its type and without wrapping it in a coroutine of its own.

#include <coroutine>
#include <utility>

#include "swp/async/co.hpp"

namespace swp::detail {

/// The parts of an ErasedCo handed from a function to its caller without the ErasedCo: two
/// pointers, trivially copyable, so they come back in two registers (an ErasedCo, which has a
/// destructor, comes back through memory: on the engines' hot path, where each task's routine
/// returns one, that cost 5 instructions per task). The receiver adopts them at once
/// (`ErasedCo(ReleasedCo)`); nothing else owns the frame meanwhile. Empty (no frame): what a
/// body that completed synchronously returns.
struct ReleasedCo {
  std::coroutine_handle<> handle;
  CoPromiseBase* promise = nullptr;
};

/// Owns the frame of a Co<T> that has not started (or an empty one). The Co's value, when it
/// has one, was routed to a sink beforehand (Co::deliver_to): all that is left to learn from
/// the coroutine is whether it failed.
///
/// Completion, errors: as Co's `start_detached` / `co_await` (the error is rethrown by the
/// await). Cancellation: none of its own.
/// Example:
/// ```
/// Co<int> body = compute(ctx);
/// body.deliver_to(&slot);                 // std::optional<int> slot
/// ErasedCo root(std::move(body));
/// root.start_detached(&lane, on_done, ctx_ptr, &stop, &instance);
/// ```
class ErasedCo {
 public:
  ErasedCo() noexcept = default;
  template <class T>
  explicit ErasedCo(Co<T>&& co) noexcept {
    auto h = co.release();
    if (h) {
      handle_ = h;
      promise_ = &h.promise();
    }
  }
  /// Adopts the frame `parts` carries (see ReleasedCo).
  explicit ErasedCo(ReleasedCo parts) noexcept : handle_(parts.handle), promise_(parts.promise) {}
  ErasedCo(ErasedCo&& other) noexcept
      : handle_(std::exchange(other.handle_, {})), promise_(std::exchange(other.promise_, nullptr)) {}
  ErasedCo& operator=(ErasedCo&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
      promise_ = std::exchange(other.promise_, nullptr);
    }
    return *this;
  }
  ErasedCo(const ErasedCo&) = delete;
  ErasedCo& operator=(const ErasedCo&) = delete;
  ~ErasedCo() { reset(); }

  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(handle_); }

  /// Gives up the frame: the caller hands it on (see ReleasedCo). Leaves this empty.
  [[nodiscard]] ReleasedCo release() noexcept {
    return {std::exchange(handle_, {}), std::exchange(promise_, nullptr)};
  }

  /// Co::start for the erased coroutine: the frame stays here until this object goes.
  void start(Resumer* resumer, CoPromiseBase::Completion completion, void* context,
             const StopSignal* stop = nullptr, CoEnvironment* environment = nullptr) noexcept {
    prepare(resumer, completion, context, stop, environment);
    handle_.resume();
  }

  /// Co::start_detached for the erased coroutine: it frees its frame once it finished.
  void start_detached(Resumer* resumer, CoPromiseBase::Completion completion, void* context,
                      const StopSignal* stop = nullptr,
                      CoEnvironment* environment = nullptr) noexcept {
    promise_->set_detached();
    prepare(resumer, completion, context, stop, environment);
    std::exchange(handle_, {}).resume();
    promise_ = nullptr;
  }

  /// Awaiting runs it; the awaiter continues when it finished and gets its error rethrown.
  class Awaiter {
   public:
    explicit Awaiter(const ErasedCo& co) noexcept : co_(co) {}
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class Parent>
    bool await_suspend(std::coroutine_handle<Parent> parent) noexcept {
      co_.promise_->set_continuation(parent, co_promise_of(parent));
      co_.handle_.resume();
      return !co_.promise_->finished_before_parent_suspended();
    }
    void await_resume() const { co_.promise_->rethrow_if_failed(); }

   private:
    const ErasedCo& co_;
  };
  Awaiter operator co_await() const& noexcept { return Awaiter(*this); }

 private:
  void prepare(Resumer* resumer, CoPromiseBase::Completion completion, void* context,
               const StopSignal* stop, CoEnvironment* environment) noexcept {
    promise_->set_resumer(resumer);
    promise_->set_stop_signal(stop);
    promise_->set_environment(environment);
    promise_->set_completion(completion, context);
  }

  void reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = {};
    promise_ = nullptr;
  }

  std::coroutine_handle<> handle_;
  CoPromiseBase* promise_ = nullptr;
};

}  // namespace swp::detail
