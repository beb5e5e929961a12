#pragma once
// TaskHooks: what an engine tells about its instances besides running them — a TaskObserver's
// calls and NVTX ranges — for the pipelined and the serial runs alike.

#include <mutex>

#include "swp/async/lane.hpp"
#include "swp/engine/detail/instance.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp::detail {

/// The hooks of one engine core. Set between runs only (the core checks): an instance's step
/// reads them without a lock, and looks at on() before it calls any.
///
/// Completion: each call returns once its hooks returned (the observer's calls are noexcept).
/// Errors: none; set_nvtx turns ranges on only where NVTX is compiled in.
/// Cancellation: none; a cancelled instance is reported finished with ok == false.
///
/// Example (a step of the core):
/// ```
/// if (hooks_.on()) hooks_.started(in, false);
/// ...
/// hooks_.finished(in, !in.failed);
/// ```
class TaskHooks {
 public:
  /// An observer or NVTX ranges: an instance's step tells them.
  [[nodiscard]] bool on() const noexcept { return observer_ != nullptr || nvtx_; }
  [[nodiscard]] TaskObserver* observer() const noexcept { return observer_; }
  [[nodiscard]] bool nvtx() const noexcept { return nvtx_; }
  void set_observer(TaskObserver* observer) noexcept { observer_ = observer; }
  /// Returns whether ranges are on now: never where NVTX is not compiled in.
  bool set_nvtx(bool on) noexcept;

  /// `in` goes to `lane` by `submit()` (which hands it over): the observer hears of it first,
  /// and both happen under one lock, so that it sees each lane's submission order although
  /// several threads release onto one lane (data-flow). Without an observer, just submit().
  template <class Submit>
  void released(const Instance& in, Lane& lane, Submit submit) {
    if (observer_ == nullptr) return submit();
    std::lock_guard lock(mutex_);
    observer_->task_released(in.task(), in.iter(), lane);
    submit();
  }
  /// `in` starts its body (`serial`: in a serial iteration, which also reports it released
  /// first): task_started, and its NVTX range opens.
  void started(Instance& in, bool serial) const noexcept;
  /// `in`, holding its lane, begins to wait for `wait` (task_waiting; ranges ignore it).
  void waiting(const Instance& in, const TaskWait& wait) const noexcept {
    if (observer_ != nullptr) observer_->task_waiting(in.task(), in.iter(), *in.info->lane, wait);
  }
  /// `in` finished (`ok`: without an error): its NVTX range ends, then task_finished.
  void finished(Instance& in, bool ok) const noexcept;

 private:
  TaskObserver* observer_ = nullptr;
  bool nvtx_ = false;
  std::mutex mutex_;  // released(): the observer's calls and the submissions in one order
};

}  // namespace swp::detail
