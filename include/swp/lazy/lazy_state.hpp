#pragma once
// LazyState<T>: a typed handle on shared state segments declare they read or write.

#include <cstdint>
#include <string>

#include "swp/lazy/detail/lazy_core.hpp"
#include "swp/lazy/lazy_options.hpp"

namespace swp {

/// A handle on an object outside any segment's arguments (a global table, a counter), made by
/// LazyScheduler::declare_state. Segments list it in SegmentOptions::reads / writes, which is
/// how the scheduler sees the data dependencies that reordering could break (the RFC's
/// "global variables", problem 2) — a C++ program has no Dynamo to find them, so the
/// declaration is the contract and the handle enforces it.
///
/// Errors: read()/write() from inside a segment that did not declare the access throw
/// HazardError naming the segment and the state (write() needs `writes`; read() either).
/// From plain program code (no segment running) both are allowed.
/// Lifetime: the object must outlive the handle's uses; the handle must not outlive its scheduler.
///
/// Example:
/// ```
/// std::map<int, float> table;
/// auto t = sched.declare_state("table", table);
/// auto lookup = sched.register_segment("lookup", [t](int k) { return t.read().at(k); },
///                                      {.reads = {t}});
/// ```
class LazyScheduler;

template <class T>
class LazyState {
 public:
  /// The object, for reading (checks the running segment declared a read or a write).
  [[nodiscard]] const T& read() const {
    core_->check_state(id_, false);
    return *object_;
  }
  /// The object, for writing (checks the running segment declared a write).
  [[nodiscard]] T& write() const {
    core_->check_state(id_, true);
    return *object_;
  }
  [[nodiscard]] const std::string& name() const { return core_->state_name(id_); }
  // NOLINTNEXTLINE(google-explicit-constructor): a handle is listed where a StateId is expected.
  operator StateId() const noexcept { return id_; }

 private:
  // Made by LazyScheduler::declare_state only: the core is an implementation type.
  friend class LazyScheduler;
  LazyState(detail::LazyCore& core, StateId id, T& object) noexcept
      : core_(&core), id_(id), object_(&object) {}

  detail::LazyCore* core_;
  StateId id_;
  T* object_;
};

}  // namespace swp
