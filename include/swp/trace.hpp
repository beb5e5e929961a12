#pragma once
// Timelines of runs: recording a trace, Chrome-trace/Perfetto JSON and SVG writers.

#include "swp/trace/chrome_trace.hpp"
#include "swp/trace/svg_timeline.hpp"
#include "swp/trace/trace.hpp"
#include "swp/trace/trace_recorder.hpp"
