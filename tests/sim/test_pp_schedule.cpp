#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "swp/sim/pp_schedule.hpp"

namespace test_pp_schedule {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("sim");

namespace {

// The computes of a program as "F0 F1 B0 ..." (chunks shown as .cN when there are several).
std::string computes(const swp::PpSchedule& s, int rank) {
  std::string out;
  for (const auto& a : s.programs[static_cast<std::size_t>(rank)])
    if (a.kind == swp::PpAction::Kind::compute) {
      if (!out.empty()) out += ' ';
      out += swp::describe(a, s.chunks);
    }
  return out;
}

}  // namespace

TEST_CASE("gpipe runs all forwards, then all backwards") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 3, 3);
  CHECK(s.name == "gpipe");
  for (int r = 0; r < 3; ++r) CHECK(computes(s, r) == "F0 F1 F2 B0 B1 B2");
}

TEST_CASE("1f1b warms up with ranks - rank - 1 forwards, then alternates") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 4, 6);
  CHECK(computes(s, 0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  CHECK(computes(s, 2) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  CHECK(computes(s, 3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  SUBCASE("fewer microbatches than warm-up slots") {
    const auto few = swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 4, 2);
    CHECK(computes(few, 0) == "F0 F1 B0 B1");
  }
}

TEST_CASE("interleaved walks the chunks in groups of ranks microbatches (Megatron-LM order)") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 2, 4, 2);
  // rank 0: warm-up (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forward chunks.
  CHECK(computes(s, 0) ==
        "F0.c0 F1.c0 F0.c1 F1.c1 F2.c0 B0.c1 F3.c0 B1.c1 F2.c1 B0.c0 F3.c1 B1.c0 "
        "B2.c1 B3.c1 B2.c0 B3.c0");
  // m = ranks: everything is warm-up.
  const auto full = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 2, 2, 2);
  CHECK(computes(full, 1) == "F0.c0 F1.c0 F0.c1 F1.c1 B0.c1 B1.c1 B0.c0 B1.c0");
}

TEST_CASE("forward-only schedules run the forwards in order and nothing else") {
  const auto g = swp::make_pp_schedule(swp::PpScheduleKind::one_f_one_b, 3, 4, 1, true);
  CHECK_FALSE(g.backward);
  CHECK(computes(g, 0) == "F0 F1 F2 F3");
  const auto i = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 2, 4, 2, true);
  CHECK(computes(i, 1) == "F0.c0 F1.c0 F0.c1 F1.c1 F2.c0 F3.c0 F2.c1 F3.c1");
}

TEST_CASE("computes are wrapped in the recv of their input and the send of their output") {
  const auto s = swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 2, 1);
  std::vector<std::string> r0, r1;
  for (const auto& a : s.programs[0]) r0.push_back(swp::describe(a, 1));
  for (const auto& a : s.programs[1]) r1.push_back(swp::describe(a, 1));
  CHECK(r0 == std::vector<std::string>{"F0", "send F0 to rank 1", "recv B0 from rank 1", "B0"});
  CHECK(r1 == std::vector<std::string>{"recv F0 from rank 0", "F0", "B0", "send B0 to rank 0"});
  SUBCASE("interleaved: the last rank's chunk 0 feeds rank 0's chunk 1") {
    const auto i = swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 2, 2, 2);
    CHECK(swp::describe(i.programs[1][2], 2) == "send F0.c0 to rank 0");
    bool recv_wrap = false;
    for (const auto& a : i.programs[0])
      recv_wrap = recv_wrap || swp::describe(a, 2) == "recv F0.c0 from rank 1";
    CHECK(recv_wrap);
  }
  CHECK(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 1, 3).actions() == 6);
}

TEST_CASE("schedule names parse and bad schedule arguments are named") {
  CHECK(swp::parse_schedule_kind("1f1b") == swp::PpScheduleKind::one_f_one_b);
  CHECK(swp::schedule_name(swp::PpScheduleKind::interleaved) == "interleaved");
  CHECK_THROWS_WITH_AS(swp::parse_schedule_kind("zb"),
                       "unknown schedule 'zb'; the schedules are gpipe, 1f1b, interleaved",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::make_pp_schedule(swp::PpScheduleKind::interleaved, 4, 6, 2),
                       "the interleaved schedule needs the microbatch count (6) to be a multiple "
                       "of the stage count (4)",
                       std::invalid_argument);
  CHECK_THROWS_AS(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 4, 8, 2),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 0, 8),
                       "stage count 0 must be at least 1", std::invalid_argument);
  CHECK_THROWS_AS(swp::make_pp_schedule(swp::PpScheduleKind::gpipe, 2, 0), std::invalid_argument);
}

}  // namespace test_pp_schedule
