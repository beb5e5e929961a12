#pragma once
// write_svg: a Trace as a self-contained SVG timeline, one row per stream and lane.

#include <iosfwd>
#include <string>

#include "swp/trace/trace.hpp"

namespace swp {

/// How write_svg lays a timeline out.
struct SvgOptions {
  int width = 1200;      ///< of the whole picture, row labels included (pixels, at least 400)
  int row_height = 22;   ///< of one row (pixels, at least 8)
  std::string title = {};  ///< drawn above the rows; empty: "swp run (<backend> backend)"
};

/// Writes `trace` to `out` as a self-contained SVG document (no scripts, fonts or links), in
/// the style of the seed's timelines: one row per stream, then one per lane (the trace's track
/// order), time growing to the right with an axis below the rows, a legend at the bottom.
/// - The row labels ("stream NAME", "lane NAME") take at most a third of `width`: a longer
///   label is cut with an ellipsis and its `<text>` holds the whole one as a `<title>`.
///   Widths count columns: two for East Asian wide and fullwidth characters and emoji, none
///   for combining marks and zero-width characters; a cut never splits a character.
/// - Names that are no valid UTF-8 or hold characters XML 1.0 cannot (C0 controls but tab,
///   newline, return) are written with U+FFFD in their place, one for each such character and
///   each maximal subpart of an ill-formed sequence (as write_chrome_trace): the document stays
///   valid.
/// - Device work and task instances are boxes coloured by iteration (ten colours, repeating),
///   labelled "Task/iter" where the box is wide enough; every box has a tooltip (`<title>`)
///   with its name and times.
/// - A task instance's waits for a dependency or its turn are hatched over its box: a stall
///   on the lane. Gaps between boxes are idle time. A failed instance has a red outline.
/// Each row is a `<g class="track" data-kind=... data-name=...>`, each slice one
/// `<rect class="slice <kind>" data-task data-iter>` in it: tools can read the picture back.
///
/// Throws std::invalid_argument for options out of range, std::runtime_error when `out`
/// fails while writing.
///
/// Example: `std::ofstream f("run.svg"); swp::write_svg(recorder.trace(), f, {.width = 1600});`
void write_svg(const Trace& trace, std::ostream& out, const SvgOptions& options = {});

}  // namespace swp
