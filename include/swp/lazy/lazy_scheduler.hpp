#pragma once
// LazyScheduler: decides when each named segment of a program runs (the LazyScheduler RFC).

#include <any>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "swp/lazy/deferred.hpp"
#include "swp/lazy/detail/lazy_core.hpp"
#include "swp/lazy/lazy_error.hpp"
#include "swp/lazy/lazy_options.hpp"
#include "swp/lazy/lazy_state.hpp"
#include "swp/lazy/segment.hpp"
#include "swp/lazy/segment_observer.hpp"

namespace swp {

/// Slices a program into named segments and decides when each runs, so communication can move
/// to overlap compute without rewriting the code that calls it.
///
/// The model (docs/lazy.md): `register_segment` wraps a callable or a method; calling the
/// returned Segment asks the scheduler whether to run it. Segments no schedule or hook names
/// run at once. Order constraints come from an explicit schedule (LazyOptions::schedule: each
/// listed segment runs after the one before it) and from hooks
/// (`register_segment_backward_pre_hook(target, pre)`: `pre` is held back until `target` is
/// called, then runs right before it). A call that cannot run yet — a predecessor was not
/// called, or it is a held pre-hook — is stored and returns a pending Deferred; it runs as
/// soon as it can, or when its Deferred is read (RFC problem 1), or at finish()/flush().
/// Backward segments (SegmentOptions::is_backward) run from backward(), which replays a tape
/// of the recorded forward calls in reverse (Segment::set_backward pairs them).
///
/// Rounds: the schedule orders one call of each segment per round (an iteration). End a round
/// with flush() (program code) or use round() (a pipeline task: one round per instance, tagged
/// with the instance for traces).
/// Errors: LazyError names segments (unknown names, hook cycles, a schedule that cannot be
/// honoured); SegmentError carries a segment's exception to where its value is read;
/// HazardError for reads of values a delayed segment writes and undeclared/shared state.
/// Thread-safety: one thread at a time (a program, or one pipeline task, whose lane runs its
/// instances one at a time).
///
/// Example (the RFC's):
/// ```
/// swp::LazyScheduler sched;
/// auto sdd = sched.register_segment("sdd_fwd", &SDD::forward, model.sdd);
/// auto f2 = sched.register_segment("overarch_func2", &OverArch::func2, model.overarch);
/// auto f2_bwd = sched.register_segment("overarch_func2_bwd", &OverArch::func2_backward,
///                                      model.overarch, {.is_backward = true});
/// f2.set_backward(f2_bwd);
/// sched.register_segment_backward_pre_hook("overarch_func2_bwd", "sdd_fwd");
/// auto y = sdd(ids);                 // held: pending Deferred
/// auto out = f2(x);                  // runs now
/// auto grad = sched.backward(ones);  // runs sdd_fwd, then overarch_func2_bwd
/// sched.flush();
/// ```
class LazyScheduler {
 public:
  explicit LazyScheduler(LazyOptions options = {}) : core_(std::move(options)) {}
  LazyScheduler(const LazyScheduler&) = delete;
  LazyScheduler& operator=(const LazyScheduler&) = delete;

  /// Registers `fn` (a function pointer, lambda or functor with one call signature) as the
  /// segment `name`. Throws LazyError for an empty or taken name, HazardError when its
  /// declared state conflicts with a delayed segment's; a refused registration leaves the
  /// scheduler as it was (the name stays free).
  template <class Fn>
  requires(!std::is_member_function_pointer_v<std::remove_cvref_t<Fn>>)
      Segment<std::decay_t<Fn>> register_segment(std::string name, Fn&& fn,
                                                 SegmentOptions options = {}) {
    const auto index = core_.add_segment(std::move(name), std::move(options));
    return Segment<std::decay_t<Fn>>(core_, index, std::forward<Fn>(fn));
  }

  /// Registers the method `method` of `object` (which must outlive the scheduler's use of it),
  /// as the RFC wraps an nn.Module method.
  template <class M, class C>
  requires std::is_member_function_pointer_v<M> Segment<detail::BoundMethod<M, C>> register_segment(
      std::string name, M method, C& object, SegmentOptions options = {}) {
    const auto index = core_.add_segment(std::move(name), std::move(options));
    return Segment<detail::BoundMethod<M, C>>(core_, index,
                                              detail::BoundMethod<M, C>{method, &object});
  }

  /// Runs backward segment `pre` right before backward segment `target` (the RFC's hook):
  /// `pre` is held when called until `target` is called (or a Deferred that needs it is read,
  /// or the round ends); segments the schedule puts after `pre` wait with it. Throws
  /// LazyError for unknown hook names, a target that is not a backward segment, or a cycle
  /// with the other hooks and the schedule (schedule names not registered yet are skipped
  /// here and checked at validate() or the first call).
  void register_segment_backward_pre_hook(const std::string& target, const std::string& pre) {
    core_.add_hook(target, pre, true);
  }
  /// The same for any segment (forward ones included).
  void register_segment_pre_hook(const std::string& target, const std::string& pre) {
    core_.add_hook(target, pre, false);
  }

  /// Declares shared state segments may list in SegmentOptions::reads / writes.
  template <class T>
  LazyState<T> declare_state(std::string name, T& object) {
    return LazyState<T>(core_, core_.add_state(std::move(name), &object), object);
  }

  /// Checks the schedule's names, cycles and state hazards now (otherwise at the first call).
  void validate() { core_.validate(); }

  /// The backward pass: replays the tape (the forward calls of segments with a backward, in
  /// reverse), handing each backward segment the gradient the previous one returned; returns
  /// the last gradient (pending if its segment was delayed). Throws what the backward segments'
  /// calls throw; LazyError when a gradient type does not match, or when it reaches a stored
  /// forward call that failed (naming its segment; a forward that failed within its own call
  /// left no entry, so it is skipped).
  template <class G>
  Deferred<G> backward(G seed) {
    std::any grad = Deferred<G>::ready(std::move(seed));
    core_.run_backward(grad);
    auto* out = std::any_cast<Deferred<G>>(&grad);
    if (out == nullptr)
      throw LazyError("backward: the last gradient has another type than the seed");
    return *out;
  }

  /// Ends the round: runs every stored segment that can run, holds released (a held pre-hook
  /// whose target was never called runs now), then rethrows the first SegmentError nobody
  /// read. Throws LazyError when a stored segment waits for one that was never called: that
  /// segment's Deferred fails too (and those of what waits for it), after every other stored
  /// segment ran.
  void flush() { core_.flush(); }

  /// A round for one pipeline task instance (or one iteration): segment slices carry `tag`.
  /// Call finish() at its end; a round destroyed unfinished (an exception) drops what is
  /// stored, failing its Deferreds with LazyError.
  class Round {
   public:
    Round(Round&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
    Round(const Round&) = delete;
    Round& operator=(const Round&) = delete;
    Round& operator=(Round&&) = delete;
    ~Round() {
      if (core_ != nullptr) core_->abandon();
    }
    /// As LazyScheduler::flush.
    void finish() {
      detail::LazyCore* core = std::exchange(core_, nullptr);
      if (core != nullptr) core->flush();
    }

   private:
    friend class LazyScheduler;
    explicit Round(detail::LazyCore& core) : core_(&core) {}
    detail::LazyCore* core_;
  };

  /// Starts a round. Throws LazyError while another round is open (another task instance)
  /// or when segments the schedule or a hook names were called since the last flush() (end
  /// that round with flush() first: its calls and failures must not leak into this one).
  [[nodiscard]] Round round(SegmentTag tag = {}) {
    core_.begin_round(tag);
    return Round(core_);
  }

  /// Reports each segment run to `observer` (nullptr: none). Between rounds.
  void set_observer(SegmentObserver* observer) noexcept { core_.set_observer(observer); }

  /// The segments run in the current round (or the last one, after flush), in order.
  [[nodiscard]] std::vector<std::string> executed_order() const { return core_.executed_order(); }

  /// Debug mode's findings so far: each delayed segment output that differed between runs.
  [[nodiscard]] const std::vector<DebugFinding>& debug_findings() const noexcept {
    return core_.findings();
  }

 private:
  detail::LazyCore core_;
};

}  // namespace swp
