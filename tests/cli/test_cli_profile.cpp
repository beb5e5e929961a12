// `swp profile PLAN`: per-task exposed time of a plan's synthetic costs.

#include <doctest/doctest.h>

#include <string>

#include "support/cli.hpp"
#include "support/plans.hpp"
#include "support/text.hpp"

namespace test_cli_profile {  // each test file's names apart (unity builds)

using swp::test::contains;
using swp::test::quoted;
using swp::test::run_swp;
using swp::test::TempFile;

namespace {

// A (cpu 10) -> B (cpu 5, device 100) -> C (cpu 5): closed form in test_task_profiler.cpp.
const char* kPlan = R"({"tasks": [
  {"name": "A", "cpu_us": 10},
  {"name": "B", "stream": "s", "cpu_us": 5, "device_us": 100},
  {"name": "C", "stage": 1, "cpu_us": 5}],
  "intra_iter_deps": [["B", "A"], ["C", "B"]]})";

}  // namespace

TEST_CASE("swp profile prints the report and exact metric lines on the sim backend") {
  const TempFile plan(kPlan);
  const auto r =
      run_swp("profile " + quoted(plan.str()) + " --backend sim --measure 10 --rounds 2");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(contains(r.out, "Baseline serial iteration: 0.115 ms"));
  CHECK(contains(r.out, "Task                        Exposed   % baseline"));
  CHECK(contains(r.out, "metric baseline_us_per_iter 115 us\n"));
  CHECK(contains(r.out, "metric exposed_us.A 10 us\n"));
  CHECK(contains(r.out, "metric exposed_us.B 100 us\n"));
  CHECK(contains(r.out, "metric exposed_us.C 0 us\n"));
  CHECK(contains(r.out, "metric exposed_sum_us 110 us\n"));
}

TEST_CASE("swp profile reads a preset from stdin and leaves out --skip tasks") {
  const auto r = run_swp("profile - --backend sim --measure 2 --rounds 1 --skip Forward,Backward",
                         quoted(SWP_CLI_PATH) + " preset sparse_dist --recsys-costs |");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(contains(r.out, "metric exposed_us.H2D "));
  CHECK_FALSE(contains(r.out, "exposed_us.Forward"));
  CHECK_FALSE(contains(r.out, "exposed_us.Backward"));
}

TEST_CASE("swp profile of a plan without costs reports zeros (tasks with nothing to do run)") {
  const auto r = run_swp("profile - --backend sim --measure 2 --rounds 1",
                         quoted(SWP_CLI_PATH) + " preset sparse_dist |");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(contains(r.out, "metric baseline_us_per_iter 0 us\n"));
  CHECK(contains(r.out, "metric exposed_us.OptimizerStep 0 us\n"));
  CHECK(contains(r.out, "metric exposed_sum_us 0 us\n"));
}

TEST_CASE("swp profile errors: unknown --skip task (exit 2), invalid plan (exit 1)") {
  const TempFile plan(kPlan);
  const auto unknown = run_swp("profile " + quoted(plan.str()) + " --skip A,Ghost");
  CHECK(unknown.status == 2);
  CHECK(contains(unknown.err, "'Ghost'"));

  const TempFile broken(R"({"tasks": [{"name": "A", "stage": 1}, {"name": "B"}],
                           "intra_iter_deps": [["B", "A"]]})");
  const auto invalid = run_swp("profile " + quoted(broken.str()));
  CHECK(invalid.status == 1);
  CHECK(contains(invalid.err, "error:"));

  const auto bad_flag = run_swp("profile " + quoted(plan.str()) + " --measure 0");
  CHECK(bad_flag.status == 2);
}

TEST_CASE("swp profile --max-host-streams bounds the host device's streams") {
  const TempFile plan(R"({"tasks": [
    {"name": "A", "stream": "a", "device_us": 10},
    {"name": "B", "stream": "b", "device_us": 10},
    {"name": "C", "stage": 1, "stream": "c", "device_us": 10}],
    "intra_iter_deps": [["C", "A"], ["C", "B"]]})");
  const std::string profile =
      "profile " + quoted(plan.str()) + " --warmup 0 --measure 1 --rounds 1 --workers 1 ";
  // Three streams and the kept place for "default" need 4.
  const auto refused = run_swp(profile + "--backend host --max-host-streams 3");
  CHECK(refused.status == 1);
  CHECK(contains(refused.err, "error: Runtime: cannot make stream 'c'"));
  CHECK(contains(refused.err, "--max-host-streams N raises the limit (now 3)"));
  const auto ran = run_swp(profile + "--backend host --max-host-streams 4");
  REQUIRE_MESSAGE(ran.status == 0, ran.err);
  CHECK(contains(ran.out, "metric exposed_us.C "));
  const auto zero = run_swp(profile + "--backend host --max-host-streams 0");
  CHECK(zero.status == 2);
  CHECK(contains(zero.err, "--max-host-streams: expected an integer >= 1, got '0'"));
  const auto on_sim = run_swp(profile + "--max-host-streams 4");  // sim: the default backend
  CHECK(on_sim.status == 2);
  CHECK(contains(on_sim.err, "--max-host-streams applies to --backend host only"));
#if !SWP_ASAN && !SWP_TSAN  // a sanitizer's runtime must be loaded first: no LD_PRELOAD
  // Another std::length_error (profile_synthetic throws basic_string's, as a string grown past
  // its size limit would: tests/cli/length_error_preload.cpp) is no stream limit.
  const auto other = run_swp(profile + "--backend host --max-host-streams 3",
                             "LD_PRELOAD=" + quoted(SWP_LENGTH_ERROR_PRELOAD));
  CHECK(other.status == 1);
  CHECK(other.err == "error: basic_string::_M_create\n");  // no --max-host-streams hint
#endif
}

}  // namespace test_cli_profile
