#include "swp/trace/chrome_trace.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <sstream>
#include <string>

#include "support/costed_plans.hpp"

namespace test_chrome_trace {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("trace");

namespace {

using namespace std::chrono_literals;
namespace json = boost::json;

json::array events_of(const swp::Trace& trace) {
  std::ostringstream out;
  swp::write_chrome_trace(trace, out);
  const json::value doc = json::parse(out.str());  // throws when it is not JSON
  return doc.at("traceEvents").as_array();
}

std::string str(const json::value& v) { return std::string(v.as_string()); }

}  // namespace

TEST_CASE("the Chrome trace has a complete event per slice and names every lane and stream") {
  swp::Trace trace;
  trace.backend = "sim";
  trace.tasks = {"H2D", "Fwd \"main\""};  // quotes must be escaped
  trace.tracks = {{swp::TraceTrack::Kind::stream, "memcpy"}, {swp::TraceTrack::Kind::lane, "io"}};
  using K = swp::TraceSlice::Kind;
  trace.slices = {
      {.kind = K::device, .track = 0, .task = 0, .iter = 3, .start = 1500ns, .end = 301500ns},
      {.kind = K::task, .track = 1, .task = 1, .iter = 2, .start = 10us, .end = 900us, .ok = false},
      {.kind = K::wait, .track = 1, .task = 1, .iter = 2, .start = 10us, .end = 40us,
       .waited_for = {swp::TaskWait::Kind::dependency, 0, 2}},
  };
  std::ostringstream out;
  swp::write_chrome_trace(trace, out);
  CHECK(out.str().find("E+") == std::string::npos);  // plain decimal times
  const json::value doc = json::parse(out.str());
  CHECK(str(doc.at("otherData").at("backend")) == "sim");
  const auto& events = doc.at("traceEvents").as_array();

  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  std::map<std::int64_t, std::string> process_names;
  std::vector<json::object> complete;
  for (const auto& e : events) {
    const auto& o = e.as_object();
    if (str(o.at("ph")) == "X") complete.push_back(o);
    if (str(o.at("ph")) != "M") continue;
    if (str(o.at("name")) == "thread_name")
      thread_names[{o.at("pid").as_int64(), o.at("tid").as_int64()}] = str(o.at("args").at("name"));
    if (str(o.at("name")) == "process_name")
      process_names[o.at("pid").as_int64()] = str(o.at("args").at("name"));
  }
  CHECK(process_names == std::map<std::int64_t, std::string>{{1, "streams"}, {2, "lanes"}});
  CHECK(thread_names.size() == 2);
  CHECK(thread_names[{1, 1}] == "stream memcpy");
  CHECK(thread_names[{2, 2}] == "lane io");

  REQUIRE(complete.size() == 3);
  CHECK(str(complete[0].at("name")) == "H2D/3");
  CHECK(str(complete[0].at("cat")) == "device");
  CHECK(complete[0].at("ts").as_double() == doctest::Approx(1.5));
  CHECK(complete[0].at("dur").as_double() == doctest::Approx(300));
  CHECK(complete[0].at("pid").as_int64() == 1);
  CHECK(complete[0].at("args").at("iter").as_int64() == 3);
  CHECK(str(complete[1].at("name")) == "Fwd \"main\"/2");
  CHECK(complete[1].at("args").at("ok").as_bool() == false);
  CHECK(complete[1].at("tid").as_int64() == 2);
  CHECK(str(complete[2].at("cat")) == "wait");
  CHECK(str(complete[2].at("name")) == "wait H2D/2");
  CHECK(str(complete[2].at("args").at("waits_for")) == "H2D");
  CHECK(complete[2].at("args").at("waits_for_iter").as_int64() == 2);
}

TEST_CASE("names that are no UTF-8 reach the Chrome trace with U+FFFD for each maximal subpart") {
  // Names come from plans built in code too; JSON must be UTF-8, or viewers refuse the file.
  const std::string fffd = "\uFFFD";
  swp::Trace trace;
  trace.backend = "host";
  trace.tasks = {"lone\xff-byte", "cut\xe4\xb8short", "over\xc0\x80long",
                 "surrogate\xed\xa0\x80_end"};
  trace.tracks = {{swp::TraceTrack::Kind::stream, "s\xfet\xe6\x97\xa5"},
                  {swp::TraceTrack::Kind::lane, "lane\x80"}};
  using K = swp::TraceSlice::Kind;
  trace.slices = {
      {.kind = K::device, .track = 0, .task = 0, .iter = 0, .start = 0us, .end = 1us},
      {.kind = K::task, .track = 1, .task = 1, .iter = 0, .start = 0us, .end = 5us},
      {.kind = K::segment,
       .track = 1,
       .task = 1,
       .iter = 0,
       .start = 1us,
       .end = 2us,
       .segment = "seg\xf5x\xf4\x90\x80\x80y"},
      {.kind = K::wait,
       .track = 1,
       .task = 2,
       .iter = 0,
       .start = 0us,
       .end = 1us,
       .waited_for = {swp::TaskWait::Kind::dependency, 3, 0}},
  };
  std::ostringstream out;
  swp::write_chrome_trace(trace, out);
  const json::value doc = json::parse(out.str());  // throws when it is not JSON
  std::map<std::int64_t, std::string> thread_names;
  std::vector<json::object> complete;
  for (const auto& e : doc.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (str(o.at("ph")) == "X") complete.push_back(o);
    if (str(o.at("ph")) == "M" && str(o.at("name")) == "thread_name")
      thread_names[o.at("tid").as_int64()] = str(o.at("args").at("name"));
  }
  // One U+FFFD for a stray byte, for a sequence cut short (all its bytes), and for each byte
  // of an overlong form, a surrogate or a code point past U+10FFFF (Unicode §3.9's maximal
  // subparts, as browsers decode); the valid characters around them stay.
  CHECK(thread_names[1] == "stream s" + fffd + "t\xe6\x97\xa5");
  CHECK(thread_names[2] == "lane lane" + fffd);
  REQUIRE(complete.size() == 4);
  CHECK(str(complete[0].at("name")) == "lone" + fffd + "-byte/0");
  CHECK(str(complete[0].at("args").at("task")) == "lone" + fffd + "-byte");
  CHECK(str(complete[1].at("args").at("task")) == "cut" + fffd + "short");
  CHECK(str(complete[2].at("args").at("segment")) ==
        "seg" + fffd + "x" + fffd + fffd + fffd + fffd + "y");
  CHECK(str(complete[3].at("args").at("task")) == "over" + fffd + fffd + "long");
  CHECK(str(complete[3].at("args").at("waits_for")) == "surrogate" + fffd + fffd + fffd + "_end");
}

TEST_CASE("well-formed UTF-8 and control characters in names reach the Chrome trace as they are") {
  const std::string name = "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80 e\xcc\x81 \xc2\x80 tab\there";
  swp::Trace trace;
  trace.tasks = {name};
  trace.tracks = {{swp::TraceTrack::Kind::lane, name}};
  trace.slices = {{.kind = swp::TraceSlice::Kind::task,
                   .track = 0,
                   .task = 0,
                   .iter = 1,
                   .start = 0us,
                   .end = 1us}};
  std::ostringstream out;
  swp::write_chrome_trace(trace, out);
  CHECK(out.str().find("\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80 e\xcc\x81") != std::string::npos);
  CHECK(out.str().find("tab\\there") != std::string::npos);  // Boost.JSON's escape, as before
  CHECK(out.str().find("\xef\xbf\xbd") == std::string::npos);
  const json::value doc = json::parse(out.str());
  bool found = false;
  for (const auto& e : doc.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (str(o.at("ph")) != "X") continue;
    found = true;
    CHECK(str(o.at("args").at("task")) == name);  // byte for byte
    CHECK(str(o.at("name")) == name + "/1");
  }
  CHECK(found);
}

TEST_CASE("the Chrome trace of a recorded run holds every slice of the run") {
  const auto trace =
      swp::test::record_synthetic(swp::test::costed_sparse_dist(true), swp::EngineKind::clock, 5);
  std::size_t complete = 0, waits = 0, device = 0;
  for (const auto& e : events_of(trace)) {
    const auto& o = e.as_object();
    if (str(o.at("ph")) != "X") continue;
    ++complete;
    CHECK(o.at("dur").as_double() >= 0);
    waits += str(o.at("cat")) == "wait";
    device += str(o.at("cat")) == "device";
  }
  CHECK(complete == trace.slices.size());
  CHECK(device == 8 * 5);
  CHECK(waits > 0);  // the compute lane waits for the io lane under the clock engine
}

TEST_CASE("an empty trace is still a valid Chrome trace") {
  CHECK(events_of(swp::Trace{}).size() >= 4);
}

TEST_CASE("writing a Chrome trace to a failed stream throws") {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  CHECK_THROWS_AS(swp::write_chrome_trace(swp::Trace{}, out), std::runtime_error);
}

TEST_SUITE_END();

}  // namespace test_chrome_trace
