#include "swp/trace/trace.hpp"

#include <doctest/doctest.h>

#include <chrono>

namespace test_trace {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("trace");

using namespace std::chrono_literals;

TEST_CASE("a trace names its slices task/iter and waits by what they wait for") {
  swp::Trace trace;
  trace.tasks = {"H2D", "Forward"};
  trace.tracks = {{swp::TraceTrack::Kind::stream, "memcpy"}, {swp::TraceTrack::Kind::lane, "default"}};
  using K = swp::TraceSlice::Kind;
  trace.slices = {
      {.kind = K::device, .track = 0, .task = 0, .iter = 3, .start = 0us, .end = 300us},
      {.kind = K::task, .track = 1, .task = 1, .iter = 2, .start = 10us, .end = 900us},
      {.kind = K::wait, .track = 1, .task = 1, .iter = 2, .start = 10us, .end = 40us,
       .waited_for = {swp::TaskWait::Kind::dependency, 0, 2}},
      {.kind = K::wait, .track = 1, .task = 1, .iter = 2, .start = 40us, .end = 50us,
       .waited_for = {swp::TaskWait::Kind::turn, 1, 2}},
  };
  CHECK(trace.slice_name(trace.slices[0]) == "H2D/3");
  CHECK(trace.slice_name(trace.slices[1]) == "Forward/2");
  CHECK(trace.slice_name(trace.slices[2]) == "wait H2D/2");
  CHECK(trace.slice_name(trace.slices[3]) == "wait turn");
  CHECK(trace.task_name(7) == "task#7");
  CHECK(trace.instance_name(7, 1) == "task#7/1");
  CHECK(trace.span() == 900us);
  CHECK(swp::Trace{}.span() == 0us);
}

TEST_SUITE_END();

}  // namespace test_trace
