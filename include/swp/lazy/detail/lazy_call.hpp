#pragma once
// LazyCall: one stored call of a segment, shared by the scheduler and the call's Deferred.

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace swp::detail {

class LazyCore;

/// A call of a segment the scheduler holds back (or held back and ran). The scheduler keeps it
/// while it is stored; each Deferred of the call keeps it so materialising can find the
/// scheduler. Lives on one thread (the scheduler's), like the rest of a round.
struct LazyCall {
  enum class State : std::uint8_t { stored, running, done };

  LazyCore* core = nullptr;
  std::uint32_t segment = 0;
  // Its segment's name, owned by the segment's callable, which the call keeps alive: the
  // call's Deferreds name it after the scheduler is gone.
  const std::string* name = nullptr;
  State state = State::stored;
  bool mutates_input = false;        // the segment writes one of its inputs (a T& parameter)
  std::exception_ptr error;          // the SegmentError it completed its promise with, if any
  bool error_observed = false;       // someone read the error (Deferred::get, co_await, the call)
  std::vector<const void*> written;  // the inputs it writes, while it has not run

  LazyCall() = default;
  LazyCall(const LazyCall&) = delete;
  LazyCall& operator=(const LazyCall&) = delete;
  virtual ~LazyCall() = default;

  /// Runs the body with the stored inputs and completes the call's promise (value or
  /// SegmentError, which it also stores in `error`).
  virtual void run() = 0;
  /// Materialises the Deferreds among its inputs (before it runs, so producers run first).
  virtual void ready_inputs() = 0;
  /// Calls `visit(context, producer)` for the call of each pending Deferred among its inputs
  /// (what must run before it can); stops at, and returns false for, the first visit that
  /// returns false. Runs nothing.
  virtual bool each_pending_input(bool (*visit)(void* context, LazyCall& producer),
                                  void* context) = 0;
  /// Completes the call's promise with `error` without running it (its round was abandoned).
  virtual void cancel(std::exception_ptr error) noexcept = 0;
};

/// Runs `call` now, first running what the schedule puts before it (Deferred::get). Throws
/// LazyError when a segment that must run first was not called yet.
void materialise(LazyCall& call);

}  // namespace swp::detail
