#include "swp/trace/chrome_trace.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../core/printable.hpp"

namespace swp {

namespace {

// Chrome's process ids for the two kinds of rows; its thread ids are track + 1 (0 is avoided:
// some viewers treat tid 0 as "no thread").
constexpr int stream_pid = 1;
constexpr int lane_pid = 2;

int pid_of(const TraceTrack& track) {
  return track.kind == TraceTrack::Kind::stream ? stream_pid : lane_pid;
}

// A JSON string literal (Boost.JSON escapes quotes, backslashes and control characters). JSON
// text is UTF-8, and Boost.JSON writes bytes >= 0x80 as they are: a name that is no UTF-8 (names
// come from plans built in code too) would make the whole file one that trace viewers refuse,
// so each maximal subpart of ill-formed UTF-8 becomes one U+FFFD, as in the SVG timeline and
// plan_to_json.
std::string json_string(std::string_view s) {
  return boost::json::serialize(boost::json::string(detail::valid_utf8(s)));
}

// Microseconds with nanosecond digits, in plain decimal notation: every trace viewer reads it
// (the shortest round-trip form a JSON library prints, such as 2E1, is not read by all).
std::string micros_text(Clock::duration d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", std::chrono::duration<double, std::micro>(d).count());
  return buf;
}

void metadata(std::ostream& out, const char* what, int pid, std::size_t tid, const char* key,
              const std::string& value) {
  out << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid;
  if (tid != 0) out << ",\"tid\":" << tid;
  out << ",\"args\":{\"" << key << "\":" << value << "}},\n";
}

void complete_event(std::ostream& out, const Trace& trace, const TraceSlice& slice) {
  out << "{\"name\":" << json_string(trace.slice_name(slice)) << ",\"cat\":\""
      << kind_name(slice.kind) << "\",\"ph\":\"X\",\"ts\":" << micros_text(slice.start)
      << ",\"dur\":" << micros_text(slice.end - slice.start)
      << ",\"pid\":" << pid_of(trace.tracks.at(slice.track)) << ",\"tid\":" << slice.track + 1
      << ",\"args\":{\"task\":" << json_string(trace.task_name(slice.task))
      << ",\"iter\":" << slice.iter;
  if (slice.kind == TraceSlice::Kind::segment) out << ",\"segment\":" << json_string(slice.segment);
  if (slice.kind == TraceSlice::Kind::wait) {
    if (slice.waited_for.kind == TaskWait::Kind::turn) {
      out << ",\"waits_for\":\"submission turn\"";
    } else {
      out << ",\"waits_for\":" << json_string(trace.task_name(slice.waited_for.task))
          << ",\"waits_for_iter\":" << slice.waited_for.iter;
    }
  }
  if (!slice.ok) out << ",\"ok\":false";
  out << "}}";
}

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"backend\":" << json_string(trace.backend)
      << ",\"clock\":\""
      << (trace.backend == "sim" ? "virtual time" : "wall time (emulated device clock)")
      << "\"},\n\"traceEvents\":[\n";
  metadata(out, "process_name", stream_pid, 0, "name", "\"streams\"");
  metadata(out, "process_sort_index", stream_pid, 0, "sort_index", "0");
  metadata(out, "process_name", lane_pid, 0, "name", "\"lanes\"");
  metadata(out, "process_sort_index", lane_pid, 0, "sort_index", "1");
  for (std::size_t k = 0; k < trace.tracks.size(); ++k) {
    const auto& track = trace.tracks[k];
    const char* kind = track.kind == TraceTrack::Kind::stream ? "stream " : "lane ";
    metadata(out, "thread_name", pid_of(track), k + 1, "name", json_string(kind + track.name));
    metadata(out, "thread_sort_index", pid_of(track), k + 1, "sort_index", std::to_string(k));
  }
  // Every metadata line ends with a comma: the events follow, and an empty trace ends with
  // one more (harmless) metadata event instead of a dangling comma.
  if (trace.slices.empty()) {
    out << "{\"name\":\"trace_empty\",\"ph\":\"M\",\"pid\":" << stream_pid << ",\"args\":{}}";
  }
  for (std::size_t k = 0; k < trace.slices.size(); ++k) {
    if (k > 0) out << ",\n";
    complete_event(out, trace, trace.slices[k]);
  }
  out << "\n]}\n";
  if (!out) throw std::runtime_error("writing the Chrome trace failed");
}

}  // namespace swp
