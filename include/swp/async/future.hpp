#pragma once
// Future<T> / Promise<T>: a typed dependency with CPU readiness and an optional device event.

#include <atomic>
#include <cassert>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "swp/async/cancelled.hpp"
#include "swp/async/co.hpp"
#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/device_event.hpp"
#include "swp/async/resumer.hpp"

namespace swp {

namespace detail {

/// One suspended awaiter of a FutureState (or of anything with the same claim protocol).
///
/// `phase`: 0 while the awaiter is still inside await_suspend, 1 once suspended, 2 once
/// claimed for resumption. Exactly one party claims (the completer, or a canceller that managed
/// to unlink the waiter first); claiming during phase 0 resumes nothing, because await_suspend
/// then sees phase 2 and does not suspend. This is what makes it safe to register a stop
/// callback after publishing the waiter.
struct FutureWaiter {
  std::coroutine_handle<> handle;
  Resumer* resumer = nullptr;
  FutureWaiter* prev = nullptr;
  FutureWaiter* next = nullptr;
  std::atomic<int> phase{0};
  bool cancelled = false;  // written before the claim, read after resumption

  /// Resumes the waiter unless it is still suspending. Called once, by the claimer.
  void claim() noexcept {
    if (phase.exchange(2, std::memory_order_acq_rel) == 1) resume_on(resumer, handle);
  }

  /// Ends await_suspend: true to stay suspended, false when already claimed.
  bool finish_suspend() noexcept {
    int expected = 0;
    return phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel);
  }
};

/// The shared state: readiness, error and device event, no value. Reference counted.
/// Waiters sit in a doubly-linked list under a spin lock, so a cancelled waiter can unlink
/// itself; completion publishes value, error and event (release) before it wakes anyone.
class FutureStateBase {
 public:
  FutureStateBase() = default;
  FutureStateBase(const FutureStateBase&) = delete;
  FutureStateBase& operator=(const FutureStateBase&) = delete;
  virtual ~FutureStateBase() = default;

  [[nodiscard]] bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }

  /// Links `w` unless the state already completed; false means "ready, do not suspend".
  bool add_waiter(FutureWaiter& w) noexcept {
    std::lock_guard guard(lock_);
    if (ready_.load(std::memory_order_relaxed)) return false;
    w.prev = nullptr;
    w.next = head_;
    if (head_ != nullptr) head_->prev = &w;
    head_ = &w;
    return true;
  }

  /// Unlinks `w`; false when completion already took it (completion will resume it).
  bool remove_waiter(FutureWaiter& w) noexcept {
    std::lock_guard guard(lock_);
    if (ready_.load(std::memory_order_relaxed)) return false;
    if (w.prev != nullptr) {
      w.prev->next = w.next;
    } else {
      head_ = w.next;
    }
    if (w.next != nullptr) w.next->prev = w.prev;
    return true;
  }

  /// Marks the state complete and resumes every waiter in arrival order.
  void complete() noexcept {
    FutureWaiter* list = nullptr;
    {
      std::lock_guard guard(lock_);
      assert(!ready_.load(std::memory_order_relaxed) && "a Future was completed twice");
      ready_.store(true, std::memory_order_release);
      list = std::exchange(head_, nullptr);
    }
    FutureWaiter* tail = list;
    while (tail != nullptr && tail->next != nullptr) tail = tail->next;
    while (tail != nullptr) {  // oldest first
      FutureWaiter* prev = tail->prev;  // read first: resuming may destroy the waiter
      tail->claim();
      tail = prev;
    }
  }

  /// Back to pending for reuse. Only when nobody waits (the engine's slot protocol ensures it).
  void reset_base() noexcept {
    std::lock_guard guard(lock_);
    assert(head_ == nullptr && "reset with waiters");
    error_ = nullptr;
    event_ = nullptr;
    generation_ = 0;
    ready_.store(false, std::memory_order_relaxed);
  }

  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }
  void set_event(const Event* e, std::uint64_t generation) noexcept {
    event_ = e;
    generation_ = generation;
  }
  [[nodiscard]] const std::exception_ptr& error() const noexcept { return error_; }
  [[nodiscard]] const Event* event() const noexcept { return event_; }
  [[nodiscard]] std::uint64_t event_generation() const noexcept { return generation_; }

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  /// True when this was the last reference.
  bool release_ref() noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

 private:
  SpinLock lock_;
  std::atomic<bool> ready_{false};
  FutureWaiter* head_ = nullptr;
  std::exception_ptr error_;
  const Event* event_ = nullptr;
  std::uint64_t generation_ = 0;
  std::atomic<int> refs_{0};
};

template <class T>
class FutureState final : public FutureStateBase {
 public:
  template <class... Args>
  void emplace(Args&&... args) {
    value_.emplace(std::forward<Args>(args)...);
  }
  [[nodiscard]] const T& value() const { return *value_; }
  void reset() noexcept {
    value_.reset();
    reset_base();
  }

 private:
  std::optional<T> value_;
};

template <>
class FutureState<void> final : public FutureStateBase {
 public:
  void reset() noexcept { reset_base(); }
};

/// Intrusive owning pointer to a FutureState.
template <class T>
class StateRef {
 public:
  StateRef() noexcept = default;
  explicit StateRef(FutureState<T>* s) noexcept : s_(s) {
    if (s_) s_->add_ref();
  }
  StateRef(const StateRef& o) noexcept : StateRef(o.s_) {}
  StateRef(StateRef&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  StateRef& operator=(StateRef o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~StateRef() {
    if (s_ && s_->release_ref()) delete s_;
  }
  FutureState<T>* operator->() const noexcept { return s_; }
  FutureState<T>& operator*() const noexcept { return *s_; }
  [[nodiscard]] FutureState<T>* get() const noexcept { return s_; }
  explicit operator bool() const noexcept { return s_ != nullptr; }

 private:
  FutureState<T>* s_ = nullptr;
};

}  // namespace detail

/// Something that can be made to wait, in stream order, for a generation of a device Event (a
/// device Stream). Generation 0 means "the event's latest record".
template <class S>
concept StreamWaiter = requires(S& s, const Event& e, std::uint64_t generation) {
  s.wait(e, generation);
};

/// Read side of a typed dependency.
///
/// Completion: `co_await f` resumes once the producer's promise completed (phase 1: the
/// producer was *submitted*, its device work may still run) and yields `const T&` (nothing for
/// `void`). `co_await f.on(stream)` additionally makes `stream` wait, in stream order, for the
/// producer's device event (phase 2) — never a CPU block on device completion.
/// Errors: a producer's error is rethrown from the `co_await`.
/// Cancellation: when the awaiting coroutine runs under a StopSignal (`Co::start(..., &stop)`)
/// and the signal fires while it waits, the `co_await` throws `Cancelled(reason)`.
/// Resumption happens through the awaiting coroutine's Resumer (its lane).
///
/// Example:
/// ```
/// auto [promise, future] = swp::make_promise<int>();
/// // producer:  promise.set_value(7);
/// // consumer:  int x = co_await future;   or   co_await future.on(stream);
/// ```
template <class T>
class Promise;

template <class T = void>
class Future {
 public:
  Future() noexcept = default;

  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(state_); }
  [[nodiscard]] bool ready() const noexcept { return state_->ready(); }
  /// The producer's device event, once ready (nullptr when it recorded none), and the
  /// generation of it that the producer recorded (0: unspecified, the latest).
  [[nodiscard]] const Event* event() const noexcept { return state_->event(); }
  [[nodiscard]] std::uint64_t event_generation() const noexcept {
    return state_->event_generation();
  }

  /// The error of a ready future (empty when it succeeded).
  [[nodiscard]] const std::exception_ptr& error_ptr() const noexcept { return state_->error(); }

  /// The value of a ready future; rethrows its error.
  decltype(auto) get() const {
    assert(ready());
    if (state_->error()) std::rethrow_exception(state_->error());
    if constexpr (!std::is_void_v<T>) return state_->value();
  }

  auto operator co_await() const noexcept { return Awaiter<NoStream>(state_.get(), nullptr); }

  /// Awaits readiness, then enqueues `stream.wait(event)` for the producer's device event.
  template <StreamWaiter S>
  auto on(S& stream) const noexcept {
    return Awaiter<S>(state_.get(), &stream);
  }

 private:
  struct NoStream {
    void wait(const Event&, std::uint64_t) {}
  };

  template <class S>
  struct Awaiter : detail::FutureWaiter {
    Awaiter(detail::FutureState<T>* s, S* st) noexcept : state(s), stream(st) {}
    Awaiter(Awaiter&& o) noexcept : state(o.state), stream(o.stream) {}
    // Still suspended (phase 1: linked, never claimed) only when its coroutine is destroyed
    // while it waits (a parked on_fiber's Co destroyed): unlinked then, or completing the
    // future would resume the freed frame. Otherwise one load and a branch.
    ~Awaiter() {
      if (this->phase.load(std::memory_order_relaxed) == 1) [[unlikely]]
        abandon();
    }

    struct OnStop {
      Awaiter* self;
      void operator()() const noexcept {
        if (!self->state->remove_waiter(*self)) return;  // completion got there first
        self->cancelled = true;
        self->claim();
      }
    };

    detail::FutureState<T>* state;
    S* stream;
    const StopSignal* signal = nullptr;
    std::optional<std::stop_callback<OnStop>> on_stop;

    [[nodiscard]] bool await_ready() const noexcept { return state->ready(); }
    template <class Promise>
    bool await_suspend(std::coroutine_handle<Promise> h) noexcept {
      this->handle = h;
      this->resumer = detail::resumer_of(h);
      signal = detail::stop_signal_of(h);
      if (!state->add_waiter(*this)) return false;
      if (signal != nullptr) on_stop.emplace(signal->token(), OnStop{this});
      return this->finish_suspend();
    }
    decltype(auto) await_resume() {
      on_stop.reset();
      if (this->cancelled) throw Cancelled(signal->reason());
      if (state->error()) std::rethrow_exception(state->error());
      if (stream != nullptr && state->event() != nullptr)
        stream->wait(*state->event(), state->event_generation());
      if constexpr (!std::is_void_v<T>) return state->value();
    }

    // The stop callback goes first: one running on another thread finishes (and, if it
    // unlinked the waiter, claimed it: phase 2) before the state is looked at.
    void abandon() noexcept {
      on_stop.reset();
      if (this->phase.load(std::memory_order_acquire) == 1) state->remove_waiter(*this);
    }
  };

  // Made by its Promise only (get_future): the shared state is an implementation type.
  friend class Promise<T>;
  explicit Future(detail::StateRef<T> state) noexcept : state_(std::move(state)) {}

  detail::StateRef<T> state_;
};

/// Write side of a typed dependency. Complete it exactly once with `set_value` or
/// `set_error`; `set_event` (before completing) attaches the producer's device event and the
/// generation of it the producer recorded.
template <class T = void>
class Promise {
 public:
  Promise() : state_(new detail::FutureState<T>()) {}

  [[nodiscard]] Future<T> get_future() const { return Future<T>(state_); }

  void set_event(const Event* event, std::uint64_t generation = 0) noexcept {
    state_->set_event(event, generation);
  }

  template <class... Args>
  void set_value(Args&&... args) {
    if constexpr (!std::is_void_v<T>) state_->emplace(std::forward<Args>(args)...);
    state_->complete();
  }

  void set_error(std::exception_ptr error) noexcept {
    state_->set_error(std::move(error));
    state_->complete();
  }

  [[nodiscard]] bool ready() const noexcept { return state_->ready(); }

  /// Makes the promise pending again (value, error and event cleared) so it can be reused for
  /// a later iteration. Precondition: nobody is suspended on it.
  void reset() noexcept { state_->reset(); }

 private:
  detail::StateRef<T> state_;
};

/// A fresh promise and its future.
template <class T = void>
std::pair<Promise<T>, Future<T>> make_promise() {
  Promise<T> p;
  auto f = p.get_future();
  return {std::move(p), std::move(f)};
}

}  // namespace swp
