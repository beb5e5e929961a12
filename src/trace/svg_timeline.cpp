#include "swp/trace/svg_timeline.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../core/display_width.hpp"
#include "../core/printable.hpp"

namespace swp {

namespace {

// Tableau 10: distinct at a glance, readable with dark text. Iteration i uses colour i % 10.
constexpr std::array<const char*, 10> palette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                 "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                 "#9c755f", "#bab0ac"};

// Approximate advance of one column (a Latin letter; a wide CJK character or emoji takes two)
// of the 11px sans-serif font the picture uses: enough to decide whether a label fits in its
// box (no font metrics in a self-contained file).
constexpr double char_width = 6.2;

// What stands for a maximal subpart of ill-formed UTF-8 in a name (detail::valid_utf8's rule,
// so that the Chrome trace and plan files write a name as the picture does), or for a
// character XML cannot hold: U+FFFD, the replacement character. Names come from plans built
// in code as well as from plan files (which must be UTF-8); one bad byte left as it is makes
// a browser refuse the whole picture.
constexpr std::string_view replacement = detail::replacement_character;

// One character of a name as the picture draws it: `length` bytes at the front of the text,
// `code` the code point, or `drawable` false for a maximal subpart of ill-formed UTF-8
// (detail::utf8_maximal_subpart) or a character XML 1.0 does not allow (a C0 control but tab,
// newline and return; U+FFFE, U+FFFF), drawn as one replacement character.
struct Character {
  std::size_t length = 1;
  char32_t code = 0;
  bool drawable = false;
};

Character character_at(std::string_view text) {
  const auto lead = static_cast<unsigned char>(text.front());
  if (lead < 0x80) return {1, lead, lead >= 0x20 || lead == '\t' || lead == '\n' || lead == '\r'};
  const std::size_t length = detail::utf8_sequence(text);  // strict: 0 for malformed
  if (length == 0) return {detail::utf8_maximal_subpart(text), 0, false};
  char32_t code = lead & (length == 2 ? 0x1fU : length == 3 ? 0x0fU : 0x07U);
  for (std::size_t k = 1; k < length; ++k)
    code = code << 6 | (static_cast<unsigned char>(text[k]) & 0x3fU);
  return {length, code, code != 0xfffe && code != 0xffff};
}

// The columns `c` takes on the page: 2 for East Asian wide and fullwidth characters (CJK,
// Hangul, kana, emoji), 0 for combining marks and zero-width characters, else 1; the
// replacement character takes 1. The ranges are the terminal tables' (src/core/display_width).
std::size_t columns(const Character& c) {
  return c.drawable ? detail::code_point_width(c.code) : 1;
}

// `text` as XML character data or attribute value: markup characters as references, tab,
// newline and return as character references (an attribute would read them as spaces), and
// what XML or UTF-8 cannot hold as the replacement character.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Character c = character_at(text.substr(i));
    if (!c.drawable) {
      out += replacement;
    } else if (c.length > 1) {
      out += text.substr(i, c.length);
    } else {
      switch (text[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\t': out += "&#9;"; break;
        case '\n': out += "&#10;"; break;
        case '\r': out += "&#13;"; break;
        default: out += text[i];
      }
    }
    i += c.length;
  }
  return out;
}

// A coordinate: two decimals are below what a screen can show.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// "750 µs", "1.5 ms", "2 s": the unit that keeps the number short.
std::string time_label(double us) {
  char buf[32];
  if (us == 0) return "0";
  if (std::abs(us) < 1000) {
    std::snprintf(buf, sizeof buf, "%g µs", us);
  } else if (std::abs(us) < 1e6) {
    std::snprintf(buf, sizeof buf, "%g ms", us / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%g s", us / 1e6);
  }
  return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving at most `max_ticks` ticks over `span`.
double tick_step(double span, int max_ticks) {
  const double raw = span / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

std::string track_label(const TraceTrack& track) {
  return (track.kind == TraceTrack::Kind::stream ? "stream " : "lane ") + track.name;
}

// Columns `text` takes on the page (see columns(Character)): what decides whether a label
// fits, not its bytes or code points.
std::size_t columns(std::string_view text) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < text.size();) {
    const Character c = character_at(text.substr(i));
    total += columns(c);
    i += c.length;
  }
  return total;
}

// `label` cut to at most `fit` columns (at least 1), the last of them an ellipsis, or nothing
// when it fits as it is. Cut between characters, never inside a UTF-8 sequence; a wide
// character of which only one column would fit is left out whole, and combining marks stay
// with the character before them.
std::optional<std::string> shortened(const std::string& label, std::size_t fit) {
  if (columns(label) <= fit) return std::nullopt;
  const std::size_t room = fit > 1 ? fit - 1 : 0;  // the ellipsis takes one column
  std::size_t used = 0, end = 0;
  while (end < label.size()) {
    const Character c = character_at(std::string_view(label).substr(end));
    if (used + columns(c) > room) break;
    used += columns(c);
    end += c.length;
  }
  return label.substr(0, end) + "…";
}

struct Layout {
  double left = 0;      // x of time zero
  double plot = 0;      // width of the time area
  double span_us = 1;   // time at the right edge
  double top = 40;      // y of the first row
  double row = 22;
  double gap = 6;

  [[nodiscard]] double x(Clock::duration t) const { return left + micros(t) / span_us * plot; }
  [[nodiscard]] double y(std::size_t track) const {
    return top + static_cast<double>(track) * (row + gap);
  }
};

void write_slice(std::ostream& out, const Trace& trace, const TraceSlice& s, const Layout& l) {
  const double x = l.x(s.start);
  const double w = std::max(l.x(s.end) - x, 0.5);  // a zero-length slice stays visible
  const double y = l.y(s.track);
  const std::string name = trace.slice_name(s);
  const bool wait = s.kind == TraceSlice::Kind::wait;
  const std::string fill =
      wait ? "url(#swp-wait)" : palette[static_cast<std::size_t>(s.iter) % palette.size()];
  out << "<rect class=\"slice " << kind_name(s.kind) << (s.ok ? "" : " failed")
      << "\" data-task=\"" << escape(trace.task_name(s.task)) << "\" data-iter=\"" << s.iter
      << "\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
      << "\" height=\"" << num(l.row) << "\" fill=\"" << fill << "\"><title>" << escape(name)
      << ": " << num(micros(s.start)) << " – " << num(micros(s.end)) << " µs ("
      << num(micros(s.end - s.start)) << " µs)</title></rect>\n";
  if (w >= static_cast<double>(columns(name)) * char_width + 4) {
    out << "<text class=\"label\" x=\"" << num(x + 2) << "\" y=\"" << num(y + l.row / 2 + 4)
        << "\">" << escape(name) << "</text>\n";
  }
}

void write_axis(std::ostream& out, const Layout& l, double bottom) {
  const double step = tick_step(l.span_us, std::max(2, static_cast<int>(l.plot / 90)));
  out << "<g class=\"axis\">\n<line x1=\"" << num(l.left) << "\" y1=\"" << num(bottom)
      << "\" x2=\"" << num(l.left + l.plot) << "\" y2=\"" << num(bottom) << "\"/>\n";
  for (int k = 0; k * step <= l.span_us * (1 + 1e-9); ++k) {
    const double x = l.left + k * step / l.span_us * l.plot;
    out << "<line class=\"grid\" x1=\"" << num(x) << "\" y1=\"" << num(l.top - 4) << "\" x2=\""
        << num(x) << "\" y2=\"" << num(bottom + 4) << "\"/>\n"
        << "<text x=\"" << num(x) << "\" y=\"" << num(bottom + 16)
        << "\" text-anchor=\"middle\">" << escape(time_label(k * step)) << "</text>\n";
  }
  out << "</g>\n";
}

// Legend entries laid out left to right, wrapping at the picture's width; returns its height.
double write_legend(std::ostream& out, const Trace& trace, const Layout& l, double y,
                    double width) {
  std::int64_t iterations = 0;
  for (const auto& s : trace.slices) iterations = std::max(iterations, s.iter + 1);
  const auto colours = std::min<std::int64_t>(iterations, palette.size());
  struct Entry {
    std::string fill, label;
  };
  std::vector<Entry> entries;
  for (std::int64_t i = 0; i < colours; ++i) {
    std::string label = "iter " + std::to_string(i);
    if (iterations > colours) label += ", " + std::to_string(i + colours) + ", …";
    entries.push_back({palette[static_cast<std::size_t>(i)], label});
  }
  entries.push_back({"url(#swp-wait)", "waiting (dependency or turn)"});
  entries.push_back({"#f2f2f2", "idle"});
  out << "<g class=\"legend\">\n";
  double x = l.left;
  double row_y = y;
  for (const auto& e : entries) {
    const double w = 18 + static_cast<double>(columns(e.label)) * char_width + 16;
    if (x + w > width && x > l.left) {
      x = l.left;
      row_y += 18;
    }
    out << "<rect class=\"legend-swatch\" x=\"" << num(x) << "\" y=\"" << num(row_y)
        << "\" width=\"14\" height=\"12\" fill=\"" << e.fill << "\"/>"
        << "<text x=\"" << num(x + 18) << "\" y=\"" << num(row_y + 10) << "\">"
        << escape(e.label) << "</text>\n";
    x += w;
  }
  out << "</g>\n";
  return row_y - y + 18;
}

}  // namespace

void write_svg(const Trace& trace, std::ostream& out, const SvgOptions& options) {
  if (options.width < 400)
    throw std::invalid_argument("SVG width must be at least 400 pixels, not " +
                                std::to_string(options.width));
  if (options.row_height < 8)
    throw std::invalid_argument("SVG row height must be at least 8 pixels, not " +
                                std::to_string(options.row_height));
  std::size_t label_columns = 0;
  for (const auto& t : trace.tracks)
    label_columns = std::max(label_columns, columns(track_label(t)));
  Layout l;
  l.row = options.row_height;
  // The label column takes at most a third of the picture, so the plot keeps two thirds less
  // its margin; longer labels are cut to fit (the whole name in a tooltip).
  const double max_left = options.width / 3.0;
  l.left =
      std::max(100.0, std::min(static_cast<double>(label_columns) * char_width + 16, max_left));
  const auto label_fit = static_cast<std::size_t>(std::max(1.0, (l.left - 16) / char_width));
  l.plot = options.width - l.left - 24;
  l.span_us = std::max(micros(trace.span()), 1.0);
  const double rows_end = l.y(trace.tracks.size()) - l.gap;
  const double axis_y = rows_end + 6;

  // The legend's height depends on wrapping: draw it into a buffer first, then size the page.
  std::ostringstream legend;
  const double legend_h = write_legend(legend, trace, l, axis_y + 30, options.width);
  const double height = axis_y + 30 + legend_h + 8;
  const std::string title = options.title.empty()
                                ? "swp run (" + trace.backend + " backend)"
                                : options.title;

  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\""
      << num(height) << "\" viewBox=\"0 0 " << options.width << ' ' << num(height)
      << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
      << "<title>" << escape(title) << "</title>\n"
      << "<style>.track-bg{fill:#f2f2f2}.slice{stroke:#ffffff;stroke-width:0.6}"
         ".slice.wait{stroke:none}.slice.failed{stroke:#d00000;stroke-width:2}"
         ".label{font-size:10px;fill:#111111;pointer-events:none}"
         ".axis line{stroke:#444444}.axis .grid{stroke:#dddddd}"
         ".title{font-size:14px;font-weight:bold}.track-label{fill:#222222}</style>\n"
      << "<defs><pattern id=\"swp-wait\" patternUnits=\"userSpaceOnUse\" width=\"6\" "
         "height=\"6\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
         "fill=\"#ffffff\" fill-opacity=\"0.55\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
         "stroke=\"#555555\" stroke-width=\"2\"/></pattern></defs>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text class=\"title\" x=\"8\" y=\"20\">" << escape(title) << "</text>\n";
  write_axis(out, l, axis_y);
  // The slices of each track, in the trace's order: one pass over the slices (a scan of all
  // of them per track took minutes for tens of thousands of tracks). A slice whose track is
  // not in the trace is not drawn.
  const std::size_t tracks = trace.tracks.size();
  std::vector<std::size_t> first(tracks + 1, 0);
  for (const auto& slice : trace.slices)
    if (slice.track < tracks) ++first[slice.track + 1];
  for (std::size_t k = 0; k < tracks; ++k) first[k + 1] += first[k];
  std::vector<const TraceSlice*> by_track(first[tracks]);
  {
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (const auto& slice : trace.slices)
      if (slice.track < tracks) by_track[next[slice.track]++] = &slice;
  }
  for (std::size_t k = 0; k < tracks; ++k) {
    const auto& track = trace.tracks[k];
    const std::string label = track_label(track);
    const auto cut = shortened(label, label_fit);
    out << "<g class=\"track\" data-kind=\""
        << (track.kind == TraceTrack::Kind::stream ? "stream" : "lane") << "\" data-name=\""
        << escape(track.name) << "\">\n<text class=\"track-label\" x=\"8\" y=\""
        << num(l.y(k) + l.row / 2 + 4) << "\">" << escape(cut ? *cut : label);
    if (cut) out << "<title>" << escape(label) << "</title>";
    out << "</text>\n"
        << "<rect class=\"track-bg\" x=\"" << num(l.left) << "\" y=\"" << num(l.y(k))
        << "\" width=\"" << num(l.plot) << "\" height=\"" << num(l.row) << "\"/>\n";
    for (std::size_t i = first[k]; i < first[k + 1]; ++i) write_slice(out, trace, *by_track[i], l);
    out << "</g>\n";
  }
  out << legend.str() << "</svg>\n";
  if (!out) throw std::runtime_error("writing the SVG timeline failed");
}

}  // namespace swp
