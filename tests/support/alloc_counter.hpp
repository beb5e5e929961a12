#pragma once
// Counting heap allocations in tests (tests/support/alloc_counter.cpp): the zero-allocation
// guarantees of the device and async layers are asserted with it.
//
// In the plain build alloc_counter.cpp replaces the global operator new/delete (every form)
// for the whole test executable; under AddressSanitizer or ThreadSanitizer, which provide
// their own, it installs the sanitizer's allocation hook instead, so their checks stay intact
// (that hook also sees malloc). Either way an allocation counts when it is made by a *tracked*
// thread while an AllocationCount is armed.

#include <cstddef>

namespace swp::test {

/// Makes the calling thread's allocations count (or, with false, no longer count) while an
/// AllocationCount is armed. A stream's worker thread tracks itself from an observer callback.
void track_allocations_on_this_thread(bool on = true) noexcept;

/// Counts the allocations of tracked threads from its construction on; the constructing
/// thread is tracked while it lives. One at a time.
///
/// Read the count only after synchronizing with the tracked threads (joining them,
/// synchronizing a stream): that orders their counted allocations before the read.
/// Do not use doctest assertions while armed (they may allocate): `stop()` first.
///
/// Example:
/// ```
/// swp::test::AllocationCount count;
/// do_steady_state_work();
/// CHECK(count.stop() == 0);
/// ```
class AllocationCount {
 public:
  AllocationCount() noexcept;
  ~AllocationCount();
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;

  /// Allocations counted so far.
  [[nodiscard]] std::size_t allocations() const noexcept;

  /// The size in bytes of the largest allocation counted so far (0 when none was): what
  /// shows memory that grows with a run's length.
  [[nodiscard]] std::size_t largest_allocation() const noexcept;

  /// Disarms and returns the allocations counted.
  std::size_t stop() noexcept;

 private:
  bool was_tracked_;
};

/// Whether FailNthAllocation can fail allocations: only where alloc_counter.cpp replaces
/// operator new (the plain build; a sanitizer's hook sees an allocation after it was made).
[[nodiscard]] bool allocation_failures_injectable() noexcept;

/// For fault-injection tests: the `nth` allocation (1: the next) through operator new that the
/// calling thread makes while this lives throws std::bad_alloc, once; the others succeed (so
/// the code that handles the failure can allocate). One at a time per thread; does nothing
/// where allocation_failures_injectable() is false.
///
/// Example (sweeping every allocation of a step):
/// ```
/// for (std::size_t n = 1;; ++n) {
///   bool fired = false;
///   { swp::test::FailNthAllocation fail(n); step_that_must_survive(); fired = fail.fired(); }
///   if (!fired) break;  // the step makes fewer than n allocations: each one failed once
/// }
/// ```
class FailNthAllocation {
 public:
  explicit FailNthAllocation(std::size_t nth) noexcept;
  ~FailNthAllocation();
  FailNthAllocation(const FailNthAllocation&) = delete;
  FailNthAllocation& operator=(const FailNthAllocation&) = delete;

  /// Whether the allocation failed (on this thread, so far).
  [[nodiscard]] bool fired() const noexcept;
};

}  // namespace swp::test
