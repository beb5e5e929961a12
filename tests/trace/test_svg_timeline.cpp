#include "swp/trace/svg_timeline.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#include "support/costed_plans.hpp"
#include "support/xml_dom.hpp"

namespace test_svg_timeline {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("trace");

namespace {

using namespace std::chrono_literals;
using swp::test::XmlElement;
using swp::test::XmlReader;

std::string svg_of(const swp::Trace& trace, const swp::SvgOptions& options = {}) {
  std::ostringstream out;
  swp::write_svg(trace, out, options);
  return out.str();
}

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// past U+10FFFF) of characters XML 1.0 allows (no C0 control but tab, newline and return; no
// U+FFFE, U+FFFF): what a browser needs to show the picture at all. Written apart from the
// writer's decoder so that the two check each other.
bool xml_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t n = 0;
    char32_t c = 0;
    char32_t least = 0;
    if (lead < 0x80) {
      n = 1, c = lead;
    } else if ((lead & 0xe0) == 0xc0) {
      n = 2, c = lead & 0x1fU, least = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      n = 3, c = lead & 0x0fU, least = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      n = 4, c = lead & 0x07U, least = 0x10000;
    } else {
      return false;
    }
    if (i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      c = c << 6 | (next & 0x3fU);
    }
    if (c < least || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xfffe || c == 0xffff)
      return false;
    i += n;
  }
  return true;
}

// Repeats `piece` `n` times.
std::string times(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

}  // namespace

TEST_CASE("the SVG of a SparseDist run has one row per stream and lane and one box per slice") {
  for (auto engine : {swp::EngineKind::clock, swp::EngineKind::data_flow}) {
    CAPTURE(swp::engine_name(engine));
    const swp::Trace trace =
        swp::test::record_synthetic(swp::test::costed_sparse_dist(/*io_lane=*/true), engine, 6);
    const std::string text = svg_of(trace, {.width = 1000});
    const XmlElement svg = XmlReader::parse(text);  // throws unless well-formed
    CHECK(svg.name == "svg");
    CHECK(svg.attr("xmlns") == "http://www.w3.org/2000/svg");
    CHECK(svg.attr("width") == "1000");

    const auto rows = svg.find_all("g", "track");
    REQUIRE(rows.size() == trace.tracks.size());
    std::size_t boxes = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const auto& track = trace.tracks[k];
      CAPTURE(track.name);
      CHECK(rows[k]->attr("data-name") == track.name);
      CHECK(rows[k]->attr("data-kind") ==
            (track.kind == swp::TraceTrack::Kind::stream ? "stream" : "lane"));
      std::size_t expected = 0;
      for (const auto& s : trace.slices) expected += s.track == k;
      const auto slices = rows[k]->find_all("rect", "slice");
      CHECK(slices.size() == expected);
      for (const XmlElement* r : slices) {
        CHECK(std::stod(r->attr("width")) > 0);
        CHECK(std::stod(r->attr("x")) >= 0);
        CHECK(std::stod(r->attr("x")) + std::stod(r->attr("width")) <= 1000.01);
        CHECK_FALSE(r->attr("data-task").empty());
        REQUIRE(r->find_all("title").size() == 1);  // tooltip with name and times
      }
      boxes += slices.size();
    }
    CHECK(boxes == trace.slices.size());
    // Stalls are drawn: under the clock engine the compute lane waits for the io lane (data
    // flow releases an instance only once its dependencies are done, so it never waits).
    if (engine == swp::EngineKind::clock) CHECK(svg.find_all("rect", "wait").size() > 0);
    // The legend names the iterations' colours.
    const auto legend = svg.find_all("g", "legend");
    REQUIRE(legend.size() == 1);
    CHECK(legend[0]->find_all("rect", "legend-swatch").size() == 6 + 2);
    CHECK(svg.find_all("g", "axis").size() == 1);
  }
}

TEST_CASE("the SVG escapes names and stays well-formed") {
  swp::Trace trace;
  trace.tasks = {"a<b & \"c\""};
  trace.tracks = {{swp::TraceTrack::Kind::lane, "l&1"}};
  trace.slices = {{.kind = swp::TraceSlice::Kind::task, .start = 0us, .end = 5us, .ok = false}};
  const XmlElement svg = XmlReader::parse(svg_of(trace));
  const auto rows = svg.find_all("g", "track");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]->attr("data-name") == "l&1");
  const auto boxes = svg.find_all("rect", "slice");
  REQUIRE(boxes.size() == 1);
  CHECK(boxes[0]->has_class("failed"));
  CHECK(boxes[0]->attr("data-task") == "a<b & \"c\"");
  CHECK(XmlReader::parse(svg_of(swp::Trace{})).find_all("rect", "slice").empty());
}

TEST_CASE("a long track name is cut to a label column that leaves the plot its room") {
  // A 300-character stream name made the label column wider than the picture: the plot's
  // width went negative, and so did every box's.
  swp::Trace trace;
  trace.tasks = {"A"};
  const std::string long_name(300, 's');
  trace.tracks = {{swp::TraceTrack::Kind::stream, long_name}, {swp::TraceTrack::Kind::lane, "l"}};
  trace.slices = {{.kind = swp::TraceSlice::Kind::device, .track = 0, .start = 0us, .end = 5us},
                  {.kind = swp::TraceSlice::Kind::task, .track = 1, .start = 0us, .end = 10us}};
  const int width = 800;
  const XmlElement svg = XmlReader::parse(svg_of(trace, {.width = width}));
  const auto backgrounds = svg.find_all("rect", "track-bg");
  REQUIRE(backgrounds.size() == 2);
  const double left = std::stod(backgrounds[0]->attr("x"));
  CHECK(left <= width / 3.0 + 0.01);
  CHECK(std::stod(backgrounds[0]->attr("width")) >= width - width / 3.0 - 24 - 0.01);
  for (const XmlElement* r : svg.find_all("rect", "slice")) {
    CHECK(std::stod(r->attr("width")) > 0);
    CHECK(std::stod(r->attr("x")) >= left);
    CHECK(std::stod(r->attr("x")) + std::stod(r->attr("width")) <= width + 0.01);
  }
  const auto labels = svg.find_all("text", "track-label");
  REQUIRE(labels.size() == 2);
  // Cut with an ellipsis to fit the column; the whole name stays in the label's tooltip.
  const std::string shown = labels[0]->text;
  CHECK(shown.size() < long_name.size());
  CHECK(shown.substr(0, 8) == "stream s");
  CHECK(shown.substr(shown.size() - 3) == "…");
  REQUIRE(labels[0]->find_all("title").size() == 1);
  CHECK(labels[0]->find_all("title")[0]->text == "stream " + long_name);
  CHECK(labels[1]->text == "lane l");  // short labels stay as they are
  CHECK(labels[1]->find_all("title").empty());
}

TEST_CASE("a label is cut between characters, never inside one") {
  swp::Trace trace;
  std::string name;
  for (int i = 0; i < 200; ++i) name += "\xc3\xa9";  // é, two bytes each
  trace.tracks = {{swp::TraceTrack::Kind::lane, name}};
  const XmlElement svg = XmlReader::parse(svg_of(trace, {.width = 400}));
  const auto labels = svg.find_all("text", "track-label");
  REQUIRE(labels.size() == 1);
  const std::string shown = labels[0]->text;
  REQUIRE(shown.size() > 8);
  const std::string body = shown.substr(5, shown.size() - 5 - 3);  // "lane " ... "…"
  CHECK(body.size() % 2 == 0);
  CHECK(body.find_first_not_of("\xc3\xa9") == std::string::npos);
}

// At width 400 the label column is 400 / 3 = 133.33 pixels: labels of at most
// (133.33 - 16) / 6.2 = 18 columns (Latin letters) fit, the ellipsis one of them.
TEST_CASE("a label of wide characters is cut by the columns it takes, not its characters") {
  // Counted as one column each, 12 ideographs were kept: 30 columns, half again the column.
  const std::string shu = "\u6570";  // 数, East_Asian_Width W: two columns
  swp::Trace trace;
  trace.tracks = {{swp::TraceTrack::Kind::lane, "x" + times(shu, 60)},
                  {swp::TraceTrack::Kind::lane, times("\xef\xbd\x87", 60)},  // ｇ, fullwidth
                  {swp::TraceTrack::Kind::stream, times("\U0001F680", 60)}};   // rocket emoji
  const XmlElement svg = XmlReader::parse(svg_of(trace, {.width = 400}));
  const auto labels = svg.find_all("text", "track-label");
  REQUIRE(labels.size() == 3);
  // "lane x" takes 6 of the 17 columns before the ellipsis: 5 ideographs (10) fit, and the
  // sixth, of which one column would fit, is left out whole rather than cut or overflowing.
  CHECK(labels[0]->text == "lane x" + times(shu, 5) + "\u2026");
  CHECK(labels[1]->text == "lane " + times("\xef\xbd\x87", 6) + "\u2026");
  CHECK(labels[2]->text == "stream " + times("\U0001F680", 5) + "\u2026");
  for (const XmlElement* label : labels) REQUIRE(label->find_all("title").size() == 1);
  CHECK(labels[0]->find_all("title")[0]->text == "lane x" + times(shu, 60));
  // The column is sized by columns too: two short wide labels widen it as Latin ones would.
  swp::Trace narrow;
  narrow.tracks = {{swp::TraceTrack::Kind::lane, times(shu, 12)}};  // 5 + 24 columns
  const XmlElement narrow_doc = XmlReader::parse(svg_of(narrow, {.width = 1200}));
  const auto bg = narrow_doc.find_all("rect", "track-bg");  // pointers into narrow_doc
  REQUIRE(bg.size() == 1);
  CHECK(std::stod(bg[0]->attr("x")) == doctest::Approx(29 * 6.2 + 16).epsilon(1e-3));
}

TEST_CASE("combining marks and zero-width characters take no room in a label") {
  const std::string e_acute = "e\u0301";  // e and a combining acute accent: one column
  swp::Trace trace;
  trace.tracks = {{swp::TraceTrack::Kind::lane, times(e_acute, 60)},
                  {swp::TraceTrack::Kind::lane, "a\u200db\u200bc"}};  // joiner, zero width space
  const XmlElement svg = XmlReader::parse(svg_of(trace, {.width = 400}));
  const auto labels = svg.find_all("text", "track-label");
  REQUIRE(labels.size() == 2);
  // 12 accented letters after "lane ", each with its accent: the cut never parts them.
  CHECK(labels[0]->text == "lane " + times(e_acute, 12) + "\u2026");
  CHECK(labels[1]->text == "lane a\u200db\u200bc");
  CHECK(labels[1]->find_all("title").empty());
}

TEST_CASE("a box's label is shown when its columns fit, whatever its bytes") {
  // "数据/0": 8 bytes, 6 columns. A box of 100 / 570 of the 276-pixel plot (48.4 pixels)
  // holds 6 columns (6 * 6.2 + 4 = 41.2), not 8 (53.6): the label is drawn.
  swp::Trace trace;
  trace.tasks = {"\u6570\u636e"};
  trace.tracks = {{swp::TraceTrack::Kind::lane, "l"}};
  trace.slices = {{.kind = swp::TraceSlice::Kind::task, .start = 0us, .end = 100us},
                  {.kind = swp::TraceSlice::Kind::task, .start = 560us, .end = 570us}};
  const XmlElement svg = XmlReader::parse(svg_of(trace, {.width = 400}));
  const auto boxes = svg.find_all("rect", "slice");
  REQUIRE(boxes.size() == 2);
  const double w = std::stod(boxes[0]->attr("width"));
  REQUIRE(w > 41.2);
  REQUIRE(w < 53.6);
  const auto labels = svg.find_all("text", "label");
  REQUIRE(labels.size() == 1);  // the second box is 4.8 pixels wide: no room for it
  CHECK(labels[0]->text == "\u6570\u636e/0");
}

TEST_CASE("names that are no UTF-8 or hold control characters still give a valid document") {
  // Trace is a plain struct: its names need not come from a plan file, which must be UTF-8.
  swp::Trace trace;
  trace.backend = "sim\xc0\xaf";  // an overlong '/'
  trace.tasks = {"t\xe2\x82", "u\x01v\xed\xa0\x80"};  // cut short; SOH, a surrogate
  // Stray bytes, then sequences cut short (E2 82 wants a third byte).
  trace.tracks = {
      {swp::TraceTrack::Kind::lane, "bad\xff\xfe" + times("\x80", 50) + times("\xe2\x82", 50)},
      {swp::TraceTrack::Kind::stream, "s\xef\xbf\xbe\t"}};  // U+FFFE
  trace.slices = {{.kind = swp::TraceSlice::Kind::task, .task = 0, .start = 0us, .end = 900us},
                  {.kind = swp::TraceSlice::Kind::device, .track = 1, .task = 1, .start = 0us,
                   .end = 900us}};
  const std::string text = svg_of(trace, {.width = 400});
  CHECK(xml_utf8(text));
  const XmlElement svg = XmlReader::parse(text);
  // The replacement character, one for each maximal subpart of ill-formed UTF-8 (a stray
  // byte, a sequence cut short, each byte of an overlong form or surrogate), as in the Chrome
  // trace, and one for each character XML cannot hold; each takes one column.
  const std::string fffd = "\ufffd";
  const auto rows = svg.find_all("g", "track");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->attr("data-name") == "bad" + times(fffd, 102));
  CHECK(rows[1]->attr("data-name") == "s" + fffd + "\t");
  const auto labels = svg.find_all("text", "track-label");
  REQUIRE(labels.size() == 2);
  CHECK(labels[0]->text == "lane bad" + times(fffd, 9) + "\u2026");  // 18 columns
  const auto boxes = svg.find_all("rect", "slice");
  REQUIRE(boxes.size() == 2);
  CHECK(boxes[0]->attr("data-task") == "t" + fffd);
  CHECK(boxes[1]->attr("data-task") == "u" + fffd + "v" + fffd + fffd + fffd);
  CHECK(svg.find_all("title")[0]->text == "swp run (sim" + fffd + fffd + " backend)");
}

TEST_CASE("write_svg rejects layouts it cannot draw") {
  CHECK_THROWS_WITH_AS(svg_of(swp::Trace{}, {.width = 100}),
                       "SVG width must be at least 400 pixels, not 100", std::invalid_argument);
  CHECK_THROWS_AS(svg_of(swp::Trace{}, {.row_height = 2}), std::invalid_argument);
}

TEST_CASE("the test XML reader rejects documents that are not well-formed") {
  CHECK_NOTHROW(XmlReader::parse("<?xml version=\"1.0\"?><a x='1'><b/>t&amp;<!-- c --></a>"));
  // Character references resolve to the character, as UTF-8.
  CHECK(XmlReader::parse("<a x='&#9;&#x6570;'>&#233;</a>").attr("x") == "\t\u6570");
  CHECK(XmlReader::parse("<a x='&#9;&#x6570;'>&#233;</a>").text == "\u00e9");
  for (const char* bad : {"<a><b></a></b>", "<a>", "<a x=1/>", "<a x='1' x='2'/>", "<a>&nbsp;</a>",
                          "<a/><b/>", "<a>1 < 2</a>", "text", "<a x='<'/>", "<a>&#1;</a>",
                          "<a>&#xd800;</a>", "<a>&#x110000;</a>", "<a>&#;</a>"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(XmlReader::parse(bad), swp::test::XmlError);
  }
}

TEST_SUITE_END();

}  // namespace test_svg_timeline
