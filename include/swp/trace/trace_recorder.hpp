#pragma once
// TraceRecorder: records a pipeline run (tasks per lane, waits, device work per stream).

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "swp/engine/run_observer.hpp"
#include "swp/lazy/segment_observer.hpp"
#include "swp/trace/trace.hpp"

namespace swp {

/// Records what a run did, for `write_chrome_trace` and `write_svg`: every task instance as a
/// slice on its lane (from the moment it holds the lane to the end of its submission), the
/// time it spent waiting there for a dependency or its turn, every piece of device work on its
/// stream, and the LazyScheduler segments task bodies ran (attach the recorder to the
/// scheduler too, `sched.set_observer(&rec)`, and tag each round with the instance:
/// `sched.round({scope.task(), scope.iter()})`). Times are the runtime's clock: wall time on host,
/// virtual time on sim.
///
/// Cost: a clock reading and an append under a mutex per event (four per instance at most);
/// nothing at all when no recorder is attached (the engine tests a null pointer).
/// Thread-safe: the host backend calls it from lanes and stream workers at once.
/// The recorder must outlive the runs it is attached to; a new run (run_starting) discards
/// the previous one. Device work is attributed to the task and iteration of its WorkTag; work
/// that was not queued by an engine task is shown under whatever tag its enqueuer gave it.
///
/// Example:
/// ```
/// swp::TraceRecorder rec;
/// swp::attach_run_observer(rec, pipe);   // or SyntheticRunOptions::observer = &rec
/// pipe.run(source);
/// swp::detach_run_observer(rec, pipe);
/// std::ofstream json("run.json"), svg("run.svg");
/// swp::write_chrome_trace(rec.trace(), json);
/// swp::write_svg(rec.trace(), svg);
/// ```
class TraceRecorder final : public RunObserver, public SegmentObserver {
 public:
  TraceRecorder() = default;

  /// The run recorded so far (a snapshot; callable during a run too). Tracks: the streams,
  /// then the lanes, each in the order the plan first names them; a stream only the run
  /// used (a serial run's `default`, which no task names) ends the streams.
  [[nodiscard]] Trace trace() const;

  /// Events recorded in the current run (each wait, start, finish and device work counts).
  [[nodiscard]] std::size_t event_count() const;

  void run_starting(Runtime& runtime, const PlanGraph& graph) override;
  void run_finished() noexcept override;

  void task_released(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept override;
  void task_waiting(TaskIndex task, std::int64_t iter, const Lane& lane,
                    const TaskWait& wait) noexcept override;
  void task_started(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept override;
  void task_finished(TaskIndex task, std::int64_t iter, const Lane& lane,
                     bool ok) noexcept override;
  void device_work(const Stream& stream, const DeviceWork& work) noexcept override;
  void segment_started(std::string_view segment, SegmentTag tag) noexcept override;
  void segment_finished(std::string_view segment, SegmentTag tag, bool ok) noexcept override;

 private:
  struct Event {
    enum class Kind : std::uint8_t { wait, start, finish, device, segment_start, segment_end } kind;
    bool ok = true;
    std::size_t track = 0;
    TaskIndex task = 0;
    std::int64_t iter = 0;
    Clock::time_point at{}, end{};
    TaskWait wait{};
    std::size_t segment = 0;  // segment events: index into segment_names_
  };
  // (mutex_ held) Appends a lane event of `task` stamped with the runtime's clock, if a run
  // is being recorded.
  void lane_event(Event event) noexcept;
  // (mutex_ held) The track of `stream`, added on first sight.
  std::size_t stream_track(const Stream& stream);
  // (mutex_ held) The track of `name` of kind `kind`, appended when the run has none yet.
  std::size_t track_of(TraceTrack::Kind kind, const std::string& name);

  // One lock for everything: the events of a run come from lanes and stream workers at once,
  // and a short critical section (an append) is cheaper than per-thread buffers to merge.
  mutable std::mutex mutex_;
  const Scheduler* clock_ = nullptr;     // the runtime's clock while a run is recorded
  Trace base_;                           // names and tracks of the run; slices built on demand
  std::vector<std::size_t> lane_track_;  // by task
  // The tracks by stream name, by lane name and by stream: found by hashing, not by a scan
  // of every track (a scan per task made a run of 16000 streams quadratic).
  std::unordered_map<std::string, std::size_t> stream_tracks_, lane_tracks_;
  std::unordered_map<const Stream*, std::size_t> track_of_stream_;
  std::vector<Event> events_;
  std::vector<std::string> segment_names_;  // the segments seen in this run
  // (mutex_ held) Appends a segment event of `tag`'s instance.
  void segment_event(Event::Kind kind, std::string_view segment, SegmentTag tag, bool ok) noexcept;
};

}  // namespace swp
