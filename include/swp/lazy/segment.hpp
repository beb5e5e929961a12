#pragma once
// Segment<R(A...)>: a callable registered with a LazyScheduler, named by its signature; calling
// it goes through the scheduler. Segment<Fn> is the same handle typed by the callable.

#include <any>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "swp/lazy/deferred.hpp"
#include "swp/lazy/detail/callable_traits.hpp"
#include "swp/lazy/detail/lazy_core.hpp"
#include "swp/lazy/detail/segment_args.hpp"
#include "swp/lazy/lazy_error.hpp"

namespace swp {

class LazyScheduler;

template <class F>
class Segment;

/// A registered segment (LazyScheduler::register_segment): call it like the callable it wraps.
/// Arguments may be values or Deferreds of the parameter types (a Deferred argument makes this
/// call depend on its producer, which runs first when this one runs); a parameter of type `T&`
/// is an input the segment writes and takes the caller's object (T need not be copyable; a
/// segment writing a non-copyable input is not shadow-run in debug mode, and set_backward needs
/// copy-constructible parameter types, since the tape keeps copies).
///
/// Two spellings name one handle. `Segment<R(A...)>` is named by the call signature of the
/// registered callable (for a method: its parameters without the object), as std::function
/// is, so a step function shared between schedules or a member can hold any segment of that
/// signature, whatever callable it wraps. `register_segment` returns a `Segment<Fn>` (Fn: the
/// callable's own type), which is a `Segment<R(A...)>` and converts to it without copying the
/// callable: both handles call the same registered segment. Copies share the segment too.
/// A default-constructed `Segment<R(A...)>` is empty (`!seg`); calling or naming it throws
/// LazyError.
///
/// Completion: a segment no order constraint names runs at once on the calling thread and
/// returns a ready Deferred (its real value). A segment the schedule or a hook names runs now
/// when it can (after the stored segments it must follow, and the producers of its pending
/// Deferred arguments), else it is stored and its Deferred stays pending until it runs: when
/// what it waits for is called, when something reads the Deferred, or at the end of the round.
/// A stored segment whose pending argument's producer cannot run yet stays stored (it does not
/// fail the call that would have let it run).
/// Errors: when the segment runs within its own call and throws, the call throws SegmentError
/// naming it (body exception nested); a stored segment's error surfaces where its Deferred is
/// read, or from the round's finish() if nobody read it. HazardError when an argument is an
/// input a stored segment writes; LazyError for a backward segment called directly, a
/// constrained segment called twice in one round, or an empty (default-constructed) Deferred
/// argument (naming the segment and the input: the call is refused before it counts, so the
/// segment can still be called in that round).
/// Cancellation: none; a round that ends unfinished fails the Deferreds of its stored segments.
/// Thread-safety: one thread at a time, with its scheduler.
///
/// Example:
/// ```
/// auto sdd = sched.register_segment("sdd_fwd", &SDD::forward, sdd_module);
/// swp::Deferred<Tensor> y = sdd(x);
///
/// // Step code shared between schedules names the signature, not the callable's type:
/// swp::Deferred<Tensor> step(swp::Segment<Tensor(const Tensor&)> fwd, const Tensor& x) {
///   return fwd(x);
/// }
/// step(sdd, x);
/// ```
template <class R, class... A>
class Segment<R(A...)> {
 public:
  using result_type = R;
  using params = std::tuple<A...>;
  using signature = R(A...);
  static_assert(!std::is_reference_v<result_type>, "a segment returns a value, not a reference");

  /// An empty handle (see the class comment); assign a registered segment to it.
  Segment() = default;

  /// Whether this handle names a registered segment.
  explicit operator bool() const noexcept { return core_ != nullptr; }

  [[nodiscard]] const std::string& name() const { return core().name(index_); }

  template <class... X>
  requires(sizeof...(X) == sizeof...(A)) Deferred<result_type>
  operator()(X&&... x) const {
    return call(std::index_sequence_for<X...>{}, std::forward<X>(x)...);
  }

  /// Makes the scheduler's tape record each call of this (forward) segment, so that
  /// LazyScheduler::backward replays `bwd` for it: `bwd(grad, inputs...)` returning the
  /// gradient for the segment recorded before it. `bwd` must be registered with is_backward.
  template <class BR, class... BA>
  void set_backward(const Segment<BR(BA...)>& bwd) {
    using G = std::remove_cvref_t<BR>;
    static_assert(tape_copyable,
                  "set_backward: the tape keeps copies of the forward segment's inputs, so each "
                  "parameter type must be copy-constructible");
    (void)core();
    if (!bwd.is_backward())
      throw LazyError("set_backward: segment '" + bwd.name() + "' is not a backward segment");
    shared_->backward = [bwd](SavedInputs saved) {
      return std::function<void(std::any&)>([bwd, saved = std::move(saved)](std::any& grad) {
        auto* g = std::any_cast<Deferred<G>>(&grad);
        if (g == nullptr)
          throw LazyError("backward: segment '" + bwd.name() +
                          "' got a gradient of another type than it returns");
        grad = std::apply([&](const auto&... in) { return bwd(*g, in...); }, saved);
      });
    };
  }

  [[nodiscard]] bool is_backward() const { return core().is_backward(index_); }

 protected:
  /// The segment `index` of `core`, calling `fn` (register_segment makes these, through the
  /// handle typed by the callable, which converts to this one).
  template <class Fn>
  Segment(detail::LazyCore& core, std::uint32_t index, Fn fn)
      : core_(&core), index_(index), shared_(std::make_shared<Bound<Fn>>(std::move(fn))) {
    shared_->name = core.name(index);
  }

 private:
  template <std::size_t... I>
  using StoredArgs = std::tuple<detail::Stored<std::tuple_element_t<I, params>>...>;
  // Debug mode's shadow run works on copies of the inputs the segment writes; a segment with
  // a written input that cannot be copied is not shadow-run (nor compared).
  static constexpr bool shadow_copyable =
      ((!detail::writes_param_v<A> || (std::is_copy_constructible_v<std::remove_cvref_t<A>> &&
                                       std::is_copy_assignable_v<std::remove_cvref_t<A>>)) &&
       ...);
  // The tape keeps copies of every input.
  static constexpr bool tape_copyable =
      (std::is_copy_constructible_v<std::remove_cvref_t<A>> && ...);
  using SavedInputs = std::tuple<Deferred<std::remove_cvref_t<A>>...>;

  // What every handle of the segment shares: the callable, behind one virtual call so that
  // the handle's type names the signature only, and the backward pairing (set_backward).
  struct Shared {
    Shared() = default;
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;
    virtual ~Shared() = default;
    virtual R fn(A... a) = 0;
    std::function<std::function<void(std::any&)>(SavedInputs)> backward;
    // The segment's name, for its calls' Deferreds, which may outlive the scheduler.
    std::string name;
  };
  template <class Fn>
  struct Bound final : Shared {
    explicit Bound(Fn f) : callable(std::move(f)) {}
    R fn(A... a) override { return std::invoke(callable, std::forward<A>(a)...); }
    Fn callable;
  };

  detail::LazyCore& core() const {
    if (core_ == nullptr)
      throw LazyError("an empty swp::Segment handle was used (assign a registered segment first)");
    return *core_;
  }

  template <std::size_t... I, class... X>
  Deferred<result_type> call(std::index_sequence<I...>, X&&... x) const {
    const void* inputs[sizeof...(X) + 1] = {detail::address_of(std::forward<X>(x))..., nullptr};
    detail::LazyCore& core = this->core();
    (refuse_empty(I, x), ...);  // before the call counts: a refused call leaves no trace
    const bool free = core.enter_call(index_, inputs, sizeof...(X));
    // The tape entry is taken before the call can run (recording runs nothing): a failure
    // that ends this call takes it back; a stored call that fails later leaves it, and the
    // entry then reports that failure when backward() reaches it.
    std::shared_ptr<Deferred<R>> forward;
    std::size_t tape_entry = 0;
    if constexpr (tape_copyable) {
      if (shared_->backward) {
        forward = std::make_shared<Deferred<R>>();
        tape_entry = record_tape(forward, x...);
      }
    }
    // No order constraint, or its predecessors ran already (no reordering needed): run now,
    // no record kept. Inputs from delayed segments run first, so the order shows producers first.
    // A constrained call with a pending input goes through submit(), which stores it when that
    // input's producer cannot run yet (rather than claiming it, then failing to read the input).
    if (free || (!(detail::is_pending_deferred(x) || ...) && core.claim_now(index_))) {
      (detail::materialise_if_deferred(x), ...);
      core.begin_run(index_);
      Deferred<R> out;
      try {
        if constexpr (std::is_void_v<R>) {
          shared_->fn(detail::pass(std::forward<X>(x))...);
          out = Deferred<R>::ready();
        } else {
          out = Deferred<R>::ready(shared_->fn(detail::pass(std::forward<X>(x))...));
        }
      } catch (...) {
        core.end_run(index_, false);
        if (forward) core.drop_tape(tape_entry);  // a failed forward has nothing to replay
        std::rethrow_exception(detail::segment_error(name()));
      }
      core.end_run(index_, true);
      if (!free) core.ran_now();  // stored segments waiting for this one may run now
      return out;
    }
    auto call = std::make_shared<Call<I...>>(
        *this, detail::store<std::tuple_element_t<I, params>>(std::forward<X>(x))...);
    Deferred<R> out(call->promise.get_future(), call);
    if (forward) *forward = out;
    call->core = core_;
    call->segment = index_;
    call->name = &shared_->name;
    (
        [&] {
          if constexpr (detail::writes_param_v<std::tuple_element_t<I, params>>) {
            call->mutates_input = true;
            call->written.push_back(std::get<I>(call->stored));
          }
        }(),
        ...);
    // A segment that declares state writes is not shadow-run: its writes would land twice in
    // the real state (only its T& inputs are copied for the shadow run).
    if constexpr (shadow_copyable) {
      if (core.debug() && !core.writes_state(index_) && !core.would_run_now(index_)) {
        call->shadow = std::make_unique<Shadow<I...>>();
        shadow_run(call->stored, *call->shadow);
      }
    }
    if (core.submit(call) && call->error) {
      // It ran within its own call: fail here, as a segment that runs at once does.
      call->error_observed = true;
      std::rethrow_exception(call->error);
    }
    return out;
  }

  // Debug mode: what the shadow run (at the call) produced, to compare with the real run.
  template <std::size_t... I>
  struct Shadow {
    bool ran = false;
    std::conditional_t<std::is_void_v<result_type>, char,
                       std::optional<std::remove_cvref_t<result_type>>>
        result{};
    std::tuple<std::optional<std::remove_cvref_t<std::tuple_element_t<I, params>>>...> written;
  };

  // A stored call: its inputs, its promise and (debug mode) its shadow run's outputs, in one
  // allocation.
  template <std::size_t... I>
  struct Call final : detail::LazyCall {
    template <class... S>
    explicit Call(const Segment& segment, S&&... s)
        : self(segment), stored(std::forward<S>(s)...) {}

    void run() override {
      try {
        if constexpr (std::is_void_v<R>) {
          std::apply([&](auto&... s) { self.shared_->fn(detail::unstore(s)...); }, stored);
          if (shadow) self.compare(stored, *shadow, nullptr);
          promise.set_value();
        } else {
          R r = std::apply([&](auto&... s) { return self.shared_->fn(detail::unstore(s)...); },
                           stored);
          if (shadow) self.compare(stored, *shadow, &r);
          promise.set_value(std::move(r));
        }
      } catch (...) {
        error = detail::segment_error(self.name());
        promise.set_error(error);
      }
    }
    void cancel(std::exception_ptr e) noexcept override { promise.set_error(std::move(e)); }
    bool each_pending_input(bool (*visit)(void*, detail::LazyCall&), void* context) override {
      return std::apply([&](auto&... s) { return (visit_if_pending(s, visit, context) && ...); },
                        stored);
    }
    void ready_inputs() override {
      std::apply([](auto&... s) { (detail::materialise_if_deferred(s), ...); }, stored);
    }

    Segment self;
    StoredArgs<I...> stored;
    Promise<result_type> promise;
    std::unique_ptr<Shadow<I...>> shadow;
  };

  template <class S>
  static bool visit_if_pending(const S& s, bool (*visit)(void*, detail::LazyCall&), void* context) {
    if constexpr (std::is_pointer_v<S>) {
      return true;  // the caller's object: nothing to run first
    } else {
      return !s.call_ || s.is_ready() || visit(context, *s.call_);
    }
  }

  // An empty (default-constructed) Deferred argument: no segment will ever produce it.
  template <class X>
  void refuse_empty(std::size_t input, const X& x) const {
    if constexpr (detail::is_deferred_v<X>) {
      if (!x.valid())
        throw LazyError("segment '" + name() + "': input " + std::to_string(input) +
                        " is an empty (default-constructed) Deferred; pass a value or a "
                        "Deferred a segment returned");
    }
  }

  // Copies of the inputs (Deferreds stay Deferreds: recording must not run anything), and
  // the forward call's outcome (`forward`, set once the call is stored): replaying the entry
  // of a forward that failed throws LazyError naming it instead. Returns the entry's index.
  template <class... X>
  std::size_t record_tape(std::shared_ptr<Deferred<R>> forward, const X&... x) const {
    SavedInputs saved = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return SavedInputs(detail::store<std::remove_cvref_t<std::tuple_element_t<I, params>>>(x)...);
    }
    (std::index_sequence_for<X...>{});
    return core_->push_tape([replay = shared_->backward(std::move(saved)),
                             forward = std::move(forward), name = shared_->name](std::any& grad) {
      if (forward->is_ready() && forward->future().error_ptr())
        throw LazyError("backward: forward segment '" + name +
                        "' failed in this round (its SegmentError went to its Deferred), "
                        "so its backward cannot be replayed");
      replay(grad);
    });
  }

  template <class Stored, class Sh>
  void shadow_run(Stored& stored, Sh& shadow) const {
    // Only when every input exists now: computing one would reorder other segments.
    bool ready = true;
    std::apply([&](auto&... s) { ((ready = ready && shadow_ready(s)), ...); }, stored);
    if (!ready) return;
    core_->begin_shadow(index_);
    try {
      // Inputs it writes are copied, so the shadow run leaves the caller's objects alone.
      auto copies =
          std::apply([](auto&... s) { return std::make_tuple(shadow_copy(s)...); }, stored);
      if constexpr (std::is_void_v<result_type>) {
        std::apply([&](auto&... c) { shared_->fn(shadow_arg(c)...); }, copies);
      } else {
        auto r = std::apply([&](auto&... c) { return shared_->fn(shadow_arg(c)...); }, copies);
        if constexpr (std::equality_comparable<std::remove_cvref_t<result_type>>)
          shadow.result = std::move(r);
      }
      keep_written(copies, shadow.written, std::make_index_sequence<std::tuple_size_v<params>>{});
      shadow.ran = true;
    } catch (...) {
      // The real run decides whether the segment fails; the shadow only compares outputs.
    }
    core_->end_shadow();
  }

  template <class S>
  static bool shadow_ready(const S& s) {
    if constexpr (std::is_pointer_v<S>) {
      return true;
    } else {
      return s.is_ready() && !s.future().error_ptr();
    }
  }
  template <class S>
  static auto shadow_copy(const S& s) {
    if constexpr (std::is_pointer_v<S>) {
      return std::remove_const_t<std::remove_pointer_t<S>>(*s);
    } else {
      return std::cref(s.get());
    }
  }
  template <class C>
  static decltype(auto) shadow_arg(C& c) {
    if constexpr (detail::is_reference_wrapper_v<C>) {
      return c.get();
    } else {
      return (c);
    }
  }
  template <class Copies, class Written, std::size_t... I>
  static void keep_written(Copies& copies, Written& written, std::index_sequence<I...>) {
    ((detail::writes_param_v<std::tuple_element_t<I, params>>
          ? (void)keep_one(std::get<I>(copies), std::get<I>(written))
          : (void)0),
     ...);
  }
  template <class C, class W>
  static void keep_one(C& copy, W& slot) {
    if constexpr (std::is_same_v<std::remove_cvref_t<C>, typename W::value_type>) slot = copy;
  }

  template <class Stored, class Sh>
  void compare(Stored& stored, Sh& shadow, const std::remove_cvref_t<result_type>* result) const {
    if (!shadow.ran) return;
    if constexpr (!std::is_void_v<result_type> &&
                  std::equality_comparable<std::remove_cvref_t<result_type>>) {
      if (result != nullptr && shadow.result && !(*shadow.result == *result))
        core_->add_finding(index_, "result");
    }
    compare_written(stored, shadow, std::make_index_sequence<std::tuple_size_v<params>>{});
  }
  template <class Stored, class Sh, std::size_t... I>
  void compare_written(Stored& stored, Sh& shadow, std::index_sequence<I...>) const {
    (compare_one<I>(std::get<I>(stored), std::get<I>(shadow.written)), ...);
  }
  template <std::size_t I, class S, class W>
  void compare_one(const S& s, const W& w) const {
    if constexpr (std::is_pointer_v<S> && std::equality_comparable<typename W::value_type>) {
      if (w && !(*w == *s)) core_->add_finding(index_, "input " + std::to_string(I));
    }
  }

  detail::LazyCore* core_ = nullptr;
  std::uint32_t index_ = 0;
  std::shared_ptr<Shared> shared_;
};

/// The handle register_segment returns, typed by the callable `Fn` it wraps: a
/// `Segment<R(A...)>` of Fn's call signature (see there), to which it converts.
/// Example: `swp::Segment<std::function<int(int)>> s = sched.register_segment("s", f);`
template <class Fn>
class Segment : public Segment<typename detail::Signature<Fn>::function> {
 private:
  // Made by LazyScheduler::register_segment only: the core is an implementation type.
  friend class LazyScheduler;
  Segment(detail::LazyCore& core, std::uint32_t index, Fn fn)
      : Segment<typename detail::Signature<Fn>::function>(core, index, std::move(fn)) {}
};

}  // namespace swp
