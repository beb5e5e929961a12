#pragma once
// write_chrome_trace: a Trace as Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing).

#include <iosfwd>

#include "swp/trace/trace.hpp"

namespace swp {

/// Writes `trace` to `out` as one JSON object in the Chrome trace-event format, which
/// ui.perfetto.dev and chrome://tracing open:
/// - `"traceEvents"`: a complete event (`"ph": "X"`, `ts` and `dur` in microseconds since the
///   start of the run) per slice, named as Trace::slice_name says, category `"task"`, `"wait"`
///   or `"device"`, with `args` `task`, `iter` (and `waits_for`, `waits_for_iter` for a wait,
///   `ok: false` for a failed instance). Streams are the threads of process 1 ("streams"),
///   lanes those of process 2 ("lanes"), both named and ordered by `"M"` metadata events.
///   A wait slice nests inside its task slice on the lane's thread.
/// - `"otherData"`: the backend and what the clock was (wall or virtual time).
/// Times are written in plain decimal notation with nanosecond digits. Names are JSON strings
/// (control characters escaped); in a name that is no valid UTF-8, each maximal subpart of an
/// ill-formed sequence (Unicode §3.9: a well-formed sequence cut short, else one byte that
/// starts none) is written as one U+FFFD, as browsers decode it, so the output is always JSON.
///
/// Throws std::runtime_error when `out` fails while writing.
///
/// Example: `std::ofstream f("run.json"); swp::write_chrome_trace(recorder.trace(), f);`
void write_chrome_trace(const Trace& trace, std::ostream& out);

}  // namespace swp
