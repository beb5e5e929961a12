#include "swp/trace/svg_timeline.hpp"

#include <doctest/doctest.h>

#include <chrono>
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

TEST_CASE("write_svg rejects layouts it cannot draw") {
  CHECK_THROWS_WITH_AS(svg_of(swp::Trace{}, {.width = 100}),
                       "SVG width must be at least 400 pixels, not 100", std::invalid_argument);
  CHECK_THROWS_AS(svg_of(swp::Trace{}, {.row_height = 2}), std::invalid_argument);
}

TEST_CASE("the test XML reader rejects documents that are not well-formed") {
  CHECK_NOTHROW(XmlReader::parse("<?xml version=\"1.0\"?><a x='1'><b/>t&amp;<!-- c --></a>"));
  for (const char* bad : {"<a><b></a></b>", "<a>", "<a x=1/>", "<a x='1' x='2'/>", "<a>&nbsp;</a>",
                          "<a/><b/>", "<a>1 < 2</a>", "text", "<a x='<'/>"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(XmlReader::parse(bad), swp::test::XmlError);
  }
}

TEST_SUITE_END();

}  // namespace test_svg_timeline
