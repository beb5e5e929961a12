#pragma once
// Trace: what a recorded run did, as slices on rows (lanes and streams); what the writers draw.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "swp/async/scheduler.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/task_observer.hpp"

namespace swp {

/// A row of a timeline: a lane (CPU thread group) or a stream (device queue).
struct TraceTrack {
  enum class Kind : std::uint8_t { lane, stream };
  Kind kind = Kind::lane;
  std::string name;
};

/// One interval of a recorded run.
struct TraceSlice {
  enum class Kind : std::uint8_t {
    task,     ///< a task instance holding its lane: from its first wait (or its start) to its end
    wait,     ///< within a task slice: the instance waited for `waited_for`
    device,   ///< device work of a task instance on a stream
    segment,  ///< within a task slice: a LazyScheduler segment the instance ran (`segment`)
  };
  Kind kind = Kind::task;
  std::size_t track = 0;  ///< index into Trace::tracks
  TaskIndex task = 0;     ///< the instance this slice belongs to
  std::int64_t iter = 0;
  Clock::duration start{};  ///< since the start of the run (Trace::origin)
  Clock::duration end{};
  bool ok = true;         ///< task: false when the instance failed or was cancelled
  TaskWait waited_for{};  ///< wait: what the instance waited for
  std::string segment{};  ///< segment: the segment's name
};

/// "task", "wait", "device" or "segment": the category writers give a slice kind.
[[nodiscard]] const char* kind_name(TraceSlice::Kind kind) noexcept;

/// A recorded run: names, rows and slices. Built by TraceRecorder::trace(); plain data, so
/// tests and tools can also build one by hand.
///
/// Tracks list the streams first, then the lanes, each in the order the plan first names
/// them (the order of the seed's timelines: memcpy, data_dist, default). Slices are sorted by
/// track, then start; a task slice comes before the wait and segment slices inside it.
struct Trace {
  std::string backend;             ///< "host" or "sim": wall time or virtual time
  Clock::time_point origin{};      ///< the runtime clock's reading at the start of the run
  std::vector<std::string> tasks;  ///< task names by TaskIndex
  std::vector<TraceTrack> tracks;
  std::vector<TraceSlice> slices;

  /// The end of the latest slice (zero for an empty trace).
  [[nodiscard]] Clock::duration span() const noexcept;

  /// The name writers give a slice: "Forward/3" (task and device slices), "wait Optim/2"
  /// (waiting for a dependency), "wait turn" (a globally ordered instance's turn),
  /// "sdd_fwd (Forward/3)" (a segment Forward/3 ran).
  [[nodiscard]] std::string slice_name(const TraceSlice& slice) const;

  /// The name of `task`; an index without a name prints as "task#5".
  [[nodiscard]] std::string task_name(TaskIndex task) const;

  /// "Forward/3" for (Forward, 3).
  [[nodiscard]] std::string instance_name(TaskIndex task, std::int64_t iter) const;
};

}  // namespace swp
