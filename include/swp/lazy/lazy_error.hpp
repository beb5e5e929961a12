#pragma once
// LazyError, SegmentError, HazardError: what the lazy layer throws, each naming segments.

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace swp {

/// A misuse of a LazyScheduler: an unknown segment in a schedule or hook, a cycle between
/// hooks, a schedule that cannot be honoured (a segment materialised before a segment the
/// schedule runs first was called), a segment called twice in one round. The message names
/// the segments.
class LazyError : public std::runtime_error {
 public:
  explicit LazyError(const std::string& what) : std::runtime_error(what) {}
};

/// A segment's body threw. Raised where the result is materialised (Deferred::get, co_await,
/// the call itself for a segment that ran at once); the body's exception is nested
/// (std::rethrow_if_nested).
///
/// Example: `catch (const swp::SegmentError& e) { log(e.segment()); }`
class SegmentError : public LazyError {
 public:
  SegmentError(std::string segment, const std::string& what)
      : LazyError("segment '" + segment + "' failed: " + what), segment_(std::move(segment)) {}
  [[nodiscard]] const std::string& segment() const noexcept { return segment_; }

 private:
  std::string segment_;
};

/// A data hazard that reordering would turn into a wrong result (RFC problems 2 and 3): a
/// segment reads a value a delayed segment writes, a delayed segment shares declared state
/// with another segment, a segment touches state it did not declare. `segments()` names the
/// segments involved, the first being the one whose call or registration was refused.
class HazardError : public LazyError {
 public:
  HazardError(std::vector<std::string> segments, const std::string& what)
      : LazyError(what), segments_(std::move(segments)) {}
  [[nodiscard]] const std::vector<std::string>& segments() const noexcept { return segments_; }

 private:
  std::vector<std::string> segments_;
};

}  // namespace swp
