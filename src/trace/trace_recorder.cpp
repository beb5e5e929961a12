#include "swp/trace/trace_recorder.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "swp/engine/task_scope.hpp"

namespace swp {

std::size_t TraceRecorder::track_of(TraceTrack::Kind kind, const std::string& name) {
  auto& tracks = kind == TraceTrack::Kind::stream ? stream_tracks_ : lane_tracks_;
  const auto [it, added] = tracks.try_emplace(name, base_.tracks.size());
  if (added) base_.tracks.push_back(TraceTrack{kind, name});
  return it->second;
}

void TraceRecorder::run_starting(Runtime& runtime, const PlanGraph& graph) {
  std::lock_guard lock(mutex_);
  base_ = Trace{};
  base_.backend = std::string(backend_name(runtime.backend()));
  base_.origin = runtime.now();
  events_.clear();
  segment_names_.clear();
  stream_tracks_.clear();
  lane_tracks_.clear();
  track_of_stream_.clear();
  lane_track_.assign(graph.size(), 0);
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    base_.tasks.push_back(graph.name(t));
    const std::size_t tracks = base_.tracks.size();
    const std::size_t track = track_of(TraceTrack::Kind::stream, graph.stream(t));
    if (track == tracks) track_of_stream_.emplace(&runtime.stream(graph.stream(t)), track);
  }
  for (TaskIndex t = 0; t < graph.size(); ++t)
    lane_track_[t] = track_of(TraceTrack::Kind::lane, graph.lane(t));
  clock_ = &runtime.scheduler();
}

void TraceRecorder::run_finished() noexcept {
  std::lock_guard lock(mutex_);
  clock_ = nullptr;  // the runtime may go now; the recorded events stay
}

std::size_t TraceRecorder::event_count() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

void TraceRecorder::lane_event(Event event) noexcept {
  if (clock_ == nullptr || event.task >= lane_track_.size()) return;
  event.track = lane_track_[event.task];
  // The clock is read under the lock: events of one lane are appended in time order.
  event.at = clock_->now();
  try {
    events_.push_back(event);
  } catch (...) {
    // Out of memory while tracing: the trace loses an event, the run goes on.
  }
}

void TraceRecorder::task_released(TaskIndex, std::int64_t, const Lane&) noexcept {
  // Queueing on a lane takes no lane time: a task slice starts when the instance runs.
}

void TraceRecorder::task_waiting(TaskIndex task, std::int64_t iter, const Lane&,
                                 const TaskWait& wait) noexcept {
  std::lock_guard lock(mutex_);
  lane_event(Event{.kind = Event::Kind::wait, .task = task, .iter = iter, .wait = wait});
}

void TraceRecorder::task_started(TaskIndex task, std::int64_t iter, const Lane&) noexcept {
  std::lock_guard lock(mutex_);
  lane_event(Event{.kind = Event::Kind::start, .task = task, .iter = iter});
}

void TraceRecorder::task_finished(TaskIndex task, std::int64_t iter, const Lane&,
                                  bool ok) noexcept {
  std::lock_guard lock(mutex_);
  lane_event(Event{.kind = Event::Kind::finish, .ok = ok, .task = task, .iter = iter});
}

std::size_t TraceRecorder::stream_track(const Stream& stream) {
  if (const auto it = track_of_stream_.find(&stream); it != track_of_stream_.end())
    return it->second;
  const std::size_t track = track_of(TraceTrack::Kind::stream, stream.name());
  track_of_stream_.emplace(&stream, track);
  return track;
}

void TraceRecorder::device_work(const Stream& stream, const DeviceWork& work) noexcept {
  std::lock_guard lock(mutex_);
  if (clock_ == nullptr) return;
  try {
    events_.push_back(Event{.kind = Event::Kind::device,
                            .track = stream_track(stream),
                            .task = static_cast<TaskIndex>(work.tag.task),
                            .iter = work.tag.iter,
                            .at = work.start,
                            .end = work.end});
  } catch (...) {
    // As in lane_event: a lost event, not a failed run.
  }
}

void TraceRecorder::segment_event(Event::Kind kind, std::string_view segment, SegmentTag tag,
                                  bool ok) noexcept {
  std::size_t name = 0;
  while (name < segment_names_.size() && segment_names_[name] != segment) ++name;
  try {
    if (name == segment_names_.size()) segment_names_.emplace_back(segment);
  } catch (...) {
    return;  // as in lane_event: a lost event, not a failed run
  }
  lane_event(Event{.kind = kind,
                   .ok = ok,
                   .task = static_cast<TaskIndex>(tag.task),
                   .iter = tag.iter,
                   .segment = name});
}

void TraceRecorder::segment_started(std::string_view segment, SegmentTag tag) noexcept {
  std::lock_guard lock(mutex_);
  segment_event(Event::Kind::segment_start, segment, tag, true);
}

void TraceRecorder::segment_finished(std::string_view segment, SegmentTag tag, bool ok) noexcept {
  std::lock_guard lock(mutex_);
  segment_event(Event::Kind::segment_end, segment, tag, ok);
}

Trace TraceRecorder::trace() const {
  std::vector<Event> events;
  std::vector<std::string> segment_names;
  Trace trace;
  {
    std::lock_guard lock(mutex_);
    events = events_;
    segment_names = segment_names_;
    trace = base_;
  }
  // Segments nest inside their instance's slice (a stored segment may run inside another's
  // materialisation): pair each end with the latest open start of the same instance.
  std::map<std::pair<TaskIndex, std::int64_t>, std::vector<const Event*>> open_segments;
  for (const Event& e : events) {
    if (e.kind == Event::Kind::segment_start) {
      open_segments[{e.task, e.iter}].push_back(&e);
    } else if (e.kind == Event::Kind::segment_end) {
      auto& open = open_segments[{e.task, e.iter}];
      if (open.empty()) continue;
      const Event* start = open.back();
      open.pop_back();
      trace.slices.push_back(TraceSlice{.kind = TraceSlice::Kind::segment,
                                        .track = start->track,
                                        .task = e.task,
                                        .iter = e.iter,
                                        .start = start->at - trace.origin,
                                        .end = e.at - trace.origin,
                                        .ok = e.ok,
                                        .segment = segment_names[e.segment]});
    }
  }
  std::erase_if(events, [](const Event& e) {
    return e.kind == Event::Kind::segment_start || e.kind == Event::Kind::segment_end;
  });
  // An instance's lane events, in the order they happened (appended under one lock).
  std::map<std::pair<TaskIndex, std::int64_t>, std::vector<const Event*>> instances;
  for (const Event& e : events) {
    if (e.kind == Event::Kind::device) {
      trace.slices.push_back(TraceSlice{.kind = TraceSlice::Kind::device,
                                        .track = e.track,
                                        .task = e.task,
                                        .iter = e.iter,
                                        .start = e.at - trace.origin,
                                        .end = e.end - trace.origin});
    } else {
      instances[{e.task, e.iter}].push_back(&e);
    }
  }
  for (const auto& [key, lane_events] : instances) {
    const Event* first = lane_events.front();
    const Event* last = lane_events.back();
    // An instance cancelled before it waited or started never used its lane: no slice.
    if (first->kind == Event::Kind::finish) continue;
    const bool finished = last->kind == Event::Kind::finish;
    TraceSlice task{.kind = TraceSlice::Kind::task,
                    .track = first->track,
                    .task = key.first,
                    .iter = key.second,
                    .start = first->at - trace.origin,
                    .end = last->at - trace.origin,
                    .ok = finished && last->ok};
    trace.slices.push_back(task);
    // A wait lasts until the instance's next event; one that took no time was no stall.
    for (std::size_t k = 0; k + 1 < lane_events.size(); ++k) {
      const Event& w = *lane_events[k];
      if (w.kind != Event::Kind::wait || lane_events[k + 1]->at == w.at) continue;
      trace.slices.push_back(TraceSlice{.kind = TraceSlice::Kind::wait,
                                        .track = w.track,
                                        .task = w.task,
                                        .iter = w.iter,
                                        .start = w.at - trace.origin,
                                        .end = lane_events[k + 1]->at - trace.origin,
                                        .waited_for = w.wait});
    }
  }
  // Streams first, then lanes (docs/trace.md): a stream first seen during the run (the
  // `default` stream a serial run puts its device work on, when no task of the plan names it)
  // was appended after the lanes; it moves up behind the plan's streams.
  std::vector<std::size_t> moved_to(trace.tracks.size());
  std::vector<TraceTrack> ordered;
  ordered.reserve(trace.tracks.size());
  for (const auto kind : {TraceTrack::Kind::stream, TraceTrack::Kind::lane}) {
    for (std::size_t k = 0; k < trace.tracks.size(); ++k) {
      if (trace.tracks[k].kind != kind) continue;
      moved_to[k] = ordered.size();
      ordered.push_back(std::move(trace.tracks[k]));
    }
  }
  trace.tracks = std::move(ordered);
  for (TraceSlice& slice : trace.slices) slice.track = moved_to[slice.track];
  std::ranges::stable_sort(trace.slices, [](const TraceSlice& a, const TraceSlice& b) {
    if (a.track != b.track) return a.track < b.track;
    if (a.start != b.start) return a.start < b.start;
    return a.kind == TraceSlice::Kind::task && b.kind != TraceSlice::Kind::task;
  });
  return trace;
}

}  // namespace swp
