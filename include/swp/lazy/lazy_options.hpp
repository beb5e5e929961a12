#pragma once
// LazyOptions, SegmentOptions, StateId, DebugFinding: how a LazyScheduler and its segments are set
// up.

#include <cstdint>
#include <string>
#include <vector>

namespace swp {

/// Names a piece of shared state declared with LazyScheduler::declare_state (a LazyState<T>
/// converts to it), for SegmentOptions::reads / writes.
struct StateId {
  std::uint32_t index = 0;
};

/// How a segment is registered.
struct SegmentOptions {
  /// A backward segment: called by LazyScheduler::backward() while it replays the tape (as
  /// the RFC's `is_backward=True`), never directly from forward code (LazyError).
  bool is_backward = false;
  /// Shared state (outside its arguments) the segment reads / writes. A segment that may be
  /// delayed must not share state with another segment that writes it (HazardError at
  /// registration or first call); inside the body, LazyState::read()/write() of undeclared
  /// state throws HazardError.
  std::vector<StateId> reads{};
  std::vector<StateId> writes{};
};

/// How a LazyScheduler orders segments.
struct LazyOptions {
  /// An explicit order: each listed segment runs after the one before it. A segment called
  /// before its predecessor was called is stored and runs once it can (the RFC's rule).
  /// Names are checked at the first segment call (or validate()).
  std::vector<std::string> schedule{};
  /// Debug mode (RFC problem 3): a delayed segment also runs at its call (on copies of the
  /// inputs it writes), and the outputs of the two runs are compared; differences are reported
  /// in debug_findings(). A segment that declares state writes (SegmentOptions::writes) is not
  /// run twice: its shadow run would write the real state. Expensive; off by default, and
  /// nothing runs twice without it.
  bool debug = false;
};

/// A difference debug mode found between a delayed segment's shadow run (at its call) and its
/// real run (later): `output` is "result" or "input N" (an input the segment writes).
struct DebugFinding {
  std::string segment;
  std::string output;
};

}  // namespace swp
