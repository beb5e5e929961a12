#pragma once
// LazyCore: the untyped part of a LazyScheduler (names, order constraints, rounds, checks).

#include <any>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "swp/lazy/detail/lazy_call.hpp"
#include "swp/lazy/lazy_options.hpp"
#include "swp/lazy/segment_observer.hpp"

namespace swp::detail {

/// Everything of a scheduler that does not depend on segment types. One thread at a time (the
/// scheduler's owner: a program, or a pipeline task whose lane serializes its instances).
class LazyCore {
 public:
  explicit LazyCore(LazyOptions options);
  LazyCore(const LazyCore&) = delete;
  LazyCore& operator=(const LazyCore&) = delete;
  ~LazyCore();

  std::uint32_t add_segment(std::string name, SegmentOptions options);
  StateId add_state(std::string name, const void* object);
  void add_hook(const std::string& target, const std::string& pre, bool backward);
  void validate();

  [[nodiscard]] const std::string& name(std::uint32_t segment) const {
    return segments_[segment].name;
  }
  [[nodiscard]] const std::string& state_name(StateId id) const { return states_[id.index]; }
  [[nodiscard]] bool debug() const noexcept { return options_.debug; }

  /// Checks a call of `segment` whose arguments live at `inputs` (null for non-lvalues);
  /// returns true when it runs at once with no bookkeeping (no order constraint applies).
  bool enter_call(std::uint32_t segment, const void* const* inputs, std::size_t count);

  /// For a constrained call: when everything before it ran and it is not held, records it as
  /// called and run and returns true (the caller runs it at once, then calls ran_now()).
  bool claim_now(std::uint32_t segment);
  /// After a claimed call ran: runs stored calls that were waiting for it.
  void ran_now();

  /// Hands a constrained call to the scheduler: it runs now (with what must run before it) or
  /// is stored. Returns true when it ran.
  bool submit(const std::shared_ptr<LazyCall>& call);

  /// Brackets a body that runs at once (observer, running stack, executed order).
  void begin_run(std::uint32_t segment);
  void end_run(std::uint32_t segment, bool ok) noexcept;
  /// Brackets a debug-mode shadow run: state checks apply, nothing is reported or ordered.
  void begin_shadow(std::uint32_t segment) { running_.push_back(segment); }
  void end_shadow() noexcept { running_.pop_back(); }
  /// True when a call of `segment` now would run at once (not held, predecessors ran or called).
  [[nodiscard]] bool would_run_now(std::uint32_t segment);
  /// True when the segment declares writes to shared state (SegmentOptions::writes).
  [[nodiscard]] bool writes_state(std::uint32_t segment) const {
    return !segments_[segment].options.writes.empty();
  }
  [[nodiscard]] bool is_backward(std::uint32_t segment) const {
    return segments_[segment].options.is_backward;
  }

  void materialise(LazyCall& call);
  void check_state(StateId id, bool write) const;
  void add_finding(std::uint32_t segment, std::string output);

  /// Records a forward call's backward; returns its index for drop_tape.
  std::size_t push_tape(std::function<void(std::any&)> entry) {
    tape_.push_back(std::move(entry));
    return tape_.size() - 1;
  }
  /// Takes back the entry `push_tape` returned `index` for (its forward call failed).
  void drop_tape(std::size_t index) noexcept {
    if (index < tape_.size()) tape_.erase(tape_.begin() + static_cast<std::ptrdiff_t>(index));
  }
  /// Replays the tape in reverse on `grad` (backward phase), then clears it.
  void run_backward(std::any& grad);

  /// Runs every stored segment, rethrows the first unobserved segment failure, starts a new
  /// round.
  void flush();
  /// Ends a round without running what is stored (their Deferreds get a LazyError).
  void abandon() noexcept;
  void begin_round(SegmentTag tag);

  void set_observer(SegmentObserver* observer) noexcept { observer_ = observer; }
  [[nodiscard]] std::vector<std::string> executed_order() const;
  [[nodiscard]] const std::vector<DebugFinding>& findings() const noexcept { return findings_; }

 private:
  struct Segment {
    std::string name;
    SegmentOptions options;
    std::vector<std::uint32_t> before{};        // must have run before this one (this round)
    std::vector<std::uint32_t> hold_targets{};  // held until one of these is called (pre-hooks)
    bool constrained = false;
  };
  struct Hook {
    std::string target, pre;
    bool backward;
  };

  // Undoes add_segment (its registration was refused).
  void remove_last_segment() noexcept;
  // Builds the order constraints and checks them. `strict` (validate(), the first call):
  // every schedule name must be registered; otherwise (a registration) names not registered
  // yet are skipped, and the constraints stay dirty so the next strict pass checks them.
  void prepare(bool strict);
  // False when it skipped a schedule name (not strict).
  bool build_constraints(bool strict);
  void check_cycles() const;
  void check_state_hazards() const;
  [[nodiscard]] std::uint32_t find(const std::string& name, const char* where) const;
  [[nodiscard]] bool held(std::uint32_t segment) const;
  // True when `segment`, everything before it and the producers of its pending inputs were
  // called (or ran); `missing` gets the first segment that was not (or, for a cycle through
  // inputs and the schedule, a called one). With `honour_holds` (a call running by itself:
  // submit, drain), a held pre-hook in its chain is not runnable either; materialising and
  // the round's end release holds.
  bool runnable(std::uint32_t segment, std::uint32_t& missing, bool honour_holds);
  // Why a call cannot run, given runnable()'s `missing`.
  [[nodiscard]] std::string blocked(std::uint32_t missing) const;
  void run_chain(std::uint32_t segment);
  void execute(LazyCall& call);
  void drain();
  // Flush: runs the oldest stored call that can run, holds released; false when none can.
  bool run_one_stored();
  void reset_round() noexcept;

  LazyOptions options_;
  std::vector<Segment> segments_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::vector<std::string> states_;
  std::vector<Hook> hooks_;
  bool dirty_ = true;

  // The current round.
  std::vector<char> called_, done_;
  std::vector<char> visiting_;  // runnable()'s path (a cycle guard), all 0 between calls
  std::vector<std::shared_ptr<LazyCall>> pending_;  // by segment: its stored call
  std::vector<std::shared_ptr<LazyCall>> stored_;   // stored calls, in call order
  std::vector<std::shared_ptr<LazyCall>> ran_;      // constrained calls that ran (failures)
  std::vector<std::pair<const void*, std::uint32_t>> pending_writes_;
  std::vector<std::uint32_t> executed_;
  std::vector<std::uint32_t> running_;
  std::vector<std::function<void(std::any&)>> tape_;
  bool in_backward_ = false;
  bool round_over_ = false;
  std::atomic<bool> in_round_{false};  // between round() and its finish/abandon (misuse check)  //
                                       // a flush ended the round: the next run clears executed_
  SegmentTag tag_{};
  SegmentObserver* observer_ = nullptr;
  std::vector<DebugFinding> findings_;
};

}  // namespace swp::detail
