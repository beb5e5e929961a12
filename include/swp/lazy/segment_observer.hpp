#pragma once
// SegmentObserver: watching segments run (traces show them as slices inside task slices).

#include <cstdint>
#include <string_view>

namespace swp {

/// Who a segment runs for: a pipeline task instance (task index and iteration, as the engine's
/// TaskScope gives them), or {0, 0} outside pipelines. Set per round (LazyScheduler::round).
struct SegmentTag {
  std::uint64_t task = 0;
  std::int64_t iter = 0;
};

/// Observes the segments a LazyScheduler runs: `segment_started` right before a segment's
/// body, `segment_finished` right after it (ok == false when it threw), on the thread that
/// runs it. A debug-mode shadow run is not reported. Hooks are noexcept and must be quick;
/// TraceRecorder implements it (slices of kind `segment` on the task's lane).
///
/// Example: `sched.set_observer(&recorder);`
class SegmentObserver {
 public:
  virtual void segment_started(std::string_view segment, SegmentTag tag) noexcept = 0;
  virtual void segment_finished(std::string_view segment, SegmentTag tag, bool ok) noexcept = 0;

 protected:
  ~SegmentObserver() = default;
};

}  // namespace swp
