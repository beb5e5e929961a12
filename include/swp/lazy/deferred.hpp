#pragma once
// Deferred<T>: the value of a segment call, materialised on demand (the RFC's AsyncTensor).

#include <memory>
#include <string>
#include <utility>

#include "swp/async/future.hpp"
#include "swp/lazy/detail/lazy_call.hpp"
#include "swp/lazy/lazy_error.hpp"

namespace swp {

/// The result of calling a segment: swp's Future<T> plus the way to make it ready. A segment
/// that ran at once returns a ready Deferred (its real value); a delayed one returns a pending
/// Deferred, and reading it — `get()` from plain code, `co_await` in a coroutine, or passing it
/// to another segment that runs — runs the delayed segment at once (RFC problem 1), after the
/// segments the schedule puts before it.
///
/// Completion: `get()` returns once the value exists (the segment ran on the calling thread);
/// `co_await d` materialises, then awaits the underlying Future (resumes at once, or through the
/// coroutine's Resumer if the Future is completed elsewhere). `future()` is the plain Future,
/// for code that takes one (it does not materialise).
/// Errors: a segment that threw surfaces here as SegmentError naming it (the body's exception
/// nested); materialising a segment whose schedule predecessor was not called yet throws
/// LazyError naming both.
/// Cancellation: none of its own; a co_await under a StopSignal behaves as Future's.
/// Lifetime: a pending Deferred must not outlive its scheduler's round (finish() runs every
/// stored segment, after which all its Deferreds are ready and stand alone).
///
/// Example:
/// ```
/// swp::Deferred<Tensor> y = sdd(x);   // delayed: pending
/// Tensor z = y.get();                  // runs sdd now
/// // in a coroutine:  const Tensor& z = co_await y;
/// ```
template <class F>
class Segment;

template <class T>
class Deferred {
 public:
  using value_type = T;

  Deferred() = default;

  /// A Deferred that holds `args` already (a real value).
  template <class... Args>
  static Deferred ready(Args&&... args) {
    Promise<T> promise;
    promise.set_value(std::forward<Args>(args)...);
    return Deferred(promise.get_future(), nullptr);
  }

  [[nodiscard]] bool valid() const noexcept { return future_.valid(); }
  /// True once the value (or the segment's error) exists.
  [[nodiscard]] bool is_ready() const noexcept { return future_.valid() && future_.ready(); }
  /// True when the segment writes one of its inputs (a `T&` parameter): until it runs, no other
  /// segment may read that input (HazardError).
  [[nodiscard]] bool mutated() const noexcept { return call_ && call_->mutates_input; }
  /// The segment that produces it ("" for a Deferred made by ready()). Works after the
  /// scheduler is gone (the call keeps the name).
  [[nodiscard]] std::string segment() const { return call_ ? *call_->name : std::string(); }

  /// Runs the delayed segment now if it has not run. Does nothing when ready.
  void materialise() const {
    if (is_ready()) return;
    if (!call_) throw LazyError("Deferred: empty (default-constructed) value read");
    detail::materialise(*call_);
  }

  /// Materialises, then returns the value (`const T&`; nothing for void) or throws the
  /// segment's SegmentError.
  decltype(auto) get() const {
    materialise();
    if (call_ && future_.error_ptr()) call_->error_observed = true;
    return future_.get();
  }

  /// The underlying swp Future (does not materialise).
  [[nodiscard]] const Future<T>& future() const noexcept { return future_; }

  auto operator co_await() const {
    materialise();
    if (call_ && future_.error_ptr()) call_->error_observed = true;
    return future_.operator co_await();
  }

 private:
  // A pending Deferred is made by a segment's call only: the call is an implementation type.
  template <class F>
  friend class Segment;
  Deferred(Future<T> future, std::shared_ptr<detail::LazyCall> call) noexcept
      : future_(std::move(future)), call_(std::move(call)) {}

  Future<T> future_;
  std::shared_ptr<detail::LazyCall> call_;
};

}  // namespace swp
