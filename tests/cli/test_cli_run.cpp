// `swp run`'s metric lines on short and odd runs: honest numbers, or a statement that the
// steady state was not measured.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/plans.hpp"

namespace test_cli_run {  // each test file's names apart (unity builds)

using swp::test::quoted;
using swp::test::run_swp;
using swp::test::TempFile;

namespace {

// Two streams, a jittering second stage: completions are uneven and the jitter period does
// not divide short runs.
const char* const jittery = R"({"tasks": [
  {"name": "A", "stage": 0, "stream": "a", "cpu_us": 1, "device_us": 100},
  {"name": "B", "stage": 1, "stream": "b", "cpu_us": 1, "device_us": 300,
   "jitter_every": 7, "jitter_device_us": 3000}],
  "intra_iter_deps": [["B", "A"]]})";

// Two independent tasks on two lanes and two streams: iterations complete out of order.
const char* const independent = R"({"tasks": [
  {"name": "A", "stage": 0, "stream": "a", "thread_group": "x", "cpu_us": 5, "device_us": 40},
  {"name": "B", "stage": 1, "stream": "b", "thread_group": "y", "cpu_us": 70,
   "jitter_every": 3, "jitter_device_us": 500}]})";

// Three streams of their own, none on "default": with "default" four on the host device.
const char* const three_streams = R"({"tasks": [
  {"name": "A", "stage": 0, "stream": "a", "cpu_us": 1, "device_us": 10},
  {"name": "B", "stage": 0, "stream": "b", "cpu_us": 1, "device_us": 10},
  {"name": "C", "stage": 1, "stream": "c", "cpu_us": 1, "device_us": 10}],
  "intra_iter_deps": [["C", "A"], ["C", "B"]]})";

}  // namespace

TEST_CASE("on sim, swp run never reports an efficiency above 1 or a negative time") {
  for (const char* json : {jittery, independent}) {
    const TempFile plan(json, ".json");
    for (const char* engine : {"clock", "dataflow"}) {
      for (int iters : {1, 2, 3, 5, 8, 10, 13, 50, 97}) {
        CAPTURE(json);
        CAPTURE(engine);
        CAPTURE(iters);
        const auto r = run_swp("run " + quoted(plan.str()) + " --backend sim --engine " + engine +
                               " --iters " + std::to_string(iters));
        REQUIRE(r.status == 0);
        const auto m = swp::test::metric_values(r.out);
        REQUIRE(m.contains("steady_state"));
        REQUIRE(m.contains("us_per_iter"));
        REQUIRE(m.contains("efficiency"));
        REQUIRE(m.contains("bound_us_per_iter"));
        if (m.at("steady_state") == 1) {
          CHECK(m.at("efficiency") <= 1);
          CHECK(m.at("efficiency") > 0);
          CHECK(m.at("us_per_iter") >= m.at("bound_us_per_iter") * (1 - 1e-5));
        } else {
          CHECK(std::isnan(m.at("us_per_iter")));
          CHECK(std::isnan(m.at("efficiency")));
        }
        CHECK(m.at("elapsed_us") > 0);
      }
    }
  }
}

TEST_CASE("a run too short for a steady state says so instead of printing a number") {
  const auto plan = quoted((swp::test::data_dir() / "plans" / "three_stage.json").string());
  SUBCASE("too few iterations") {
    const auto r = run_swp("run " + plan + " --engine clock --backend sim --iters 4");
    REQUIRE(r.status == 0);
    CHECK(r.out.find("metric us_per_iter nan us\n") != std::string::npos);
    CHECK(r.out.find("metric efficiency nan ratio\n") != std::string::npos);
    CHECK(r.out.find("metric steady_state 0 bool\n") != std::string::npos);
    CHECK(r.err.starts_with("warning: "));
    CHECK(r.err.find("--iters") != std::string::npos);
    const auto m = swp::test::metric_values(r.out);
    CHECK(m.at("iterations") == 4);
    CHECK(m.at("bound_us_per_iter") == doctest::Approx(1000));
  }
  SUBCASE("enough iterations") {
    const auto r = run_swp("run " + plan + " --engine clock --backend sim --iters 40");
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    const auto m = swp::test::metric_values(r.out);
    CHECK(m.at("steady_state") == 1);
    CHECK(m.at("us_per_iter") == doctest::Approx(1000));
    CHECK(m.at("efficiency") == doctest::Approx(1));
  }
}

// Each task instance a range, as a profiler attached through NVTX's injection sees them: the
// recorder (tests/device/nvtx_recorder.cpp) is loaded the way Nsight Systems is.
TEST_CASE("swp run --nvtx: each task instance is one NVTX range, started once and ended once") {
  const auto plan = quoted((swp::test::data_dir() / "plans" / "three_stage.json").string());
#ifdef SWP_NVTX_RECORDER
  for (const char* engine : {"clock", "dataflow"}) {
    for (const char* backend : {"host", "sim"}) {
      CAPTURE(engine);
      CAPTURE(backend);
      const TempFile record("", ".nvtx");
      const std::string env = "NVTX_INJECTION64_PATH=" + quoted(SWP_NVTX_RECORDER) +
                              " SWP_NVTX_RECORD=" + quoted(record.str());
      const int iters = 12;
      const auto r = run_swp("run " + plan + " --engine " + engine + " --backend " + backend +
                                 " --iters " + std::to_string(iters) + " --nvtx",
                             env);
      REQUIRE(r.status == 0);
      std::map<std::string, int> started;             // name -> how often
      std::map<unsigned long long, std::string> open;  // id -> name, until it ends
      int ended = 0;
      std::istringstream in(swp::test::read_text(record.path()));
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string kind, name;
        unsigned long long id = 0;
        int thread = 0;
        REQUIRE(static_cast<bool>(words >> kind >> id >> thread));
        if (kind == "start") {
          REQUIRE(static_cast<bool>(words >> name));
          ++started[name];
          CHECK(open.emplace(id, name).second);
        } else {
          REQUIRE(kind == "end");
          CHECK(open.erase(id) == 1);  // ends a range that started before, once
          ++ended;
        }
      }
      CHECK(open.empty());
      CHECK(ended == 3 * iters);
      CHECK(started.size() == 3 * iters);
      for (const char* task : {"Load", "Dist", "Fwd"})
        for (int i = 0; i < iters; ++i) {
          const std::string name = std::string("SWP/") + task + "/iter" + std::to_string(i);
          CAPTURE(name);
          CHECK(started[name] == 1);
        }
      // Without the flag the process makes no NVTX call: the recorder is never loaded.
      const TempFile none("", ".nvtx");
      const auto quiet = run_swp("run " + plan + " --engine " + engine + " --backend " +
                                     backend + " --iters 4",
                                 "NVTX_INJECTION64_PATH=" + quoted(SWP_NVTX_RECORDER) +
                                     " SWP_NVTX_RECORD=" + quoted(none.str()));
      REQUIRE(quiet.status == 0);
      CHECK(swp::test::read_text(none.path()).empty());
    }
  }
#else
  // A build without NVTX refuses the flag, naming it, rather than running without ranges.
  const auto r = run_swp("run " + plan + " --iters 4 --nvtx");
  CHECK(r.status == 2);
  CHECK(r.err.find("--nvtx") != std::string::npos);
  CHECK(r.out.empty());
#endif
}

TEST_CASE("swp run --max-host-streams bounds the host device's streams, one kept for default") {
  const TempFile plan(three_streams, ".json");
  const std::string run = "run " + quoted(plan.str()) + " --backend host --iters 6 --workers 1";
  SUBCASE("too few places: the run fails before it starts, naming the stream and the flag") {
    for (const char* limit : {"2", "3"}) {
      CAPTURE(limit);
      const auto r = run_swp(run + " --max-host-streams " + limit);
      CHECK(r.status == 1);
      CHECK(r.out.empty());
      CHECK(r.err.starts_with("error: Runtime: cannot make stream '"));
      CHECK(r.err.find("which is kept for the stream 'default'") != std::string::npos);
      CHECK(r.err.find("--max-host-streams N raises the limit (now " + std::string(limit) + ")") !=
            std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    // Three named streams fill a limit of 3: the third one is the one refused.
    CHECK(run_swp(run + " --max-host-streams 3").err.find("stream 'c'") != std::string::npos);
  }
  SUBCASE("enough places: the run goes on") {
    for (const char* limit : {"4", "8"}) {
      CAPTURE(limit);
      const auto r = run_swp(run + " --max-host-streams " + limit);
      REQUIRE_MESSAGE(r.status == 0, r.err);
      CHECK(swp::test::metric_values(r.out).at("iterations") == 6);
    }
  }
  SUBCASE("a value below 1 or not a number is a usage error naming the flag") {
    for (const char* bad : {"0", "-1", "many", "2.5"}) {
      CAPTURE(bad);
      const auto r = run_swp(run + " --max-host-streams " + bad);
      CHECK(r.status == 2);
      CHECK(
          r.err.starts_with("error: swp run: --max-host-streams: expected an integer >= 1, got '" +
                            std::string(bad) + "'"));
      CHECK(r.out.empty());
    }
  }
  SUBCASE("another std::length_error is no stream limit: reported without the flag's hint") {
#if SWP_ASAN || SWP_TSAN
    // A sanitizer's runtime must be the first library loaded: no LD_PRELOAD before it.
    MESSAGE("skipped under a sanitizer: the test preloads a library");
#else
    // run_synthetic throws std::length_error("vector::_M_default_append"), as a container
    // grown past its size limit would (tests/cli/length_error_preload.cpp).
    const auto r =
        run_swp(run + " --max-host-streams 2", "LD_PRELOAD=" + quoted(SWP_LENGTH_ERROR_PRELOAD));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "error: vector::_M_default_append\n");  // as any other error of a run
#endif
  }
  SUBCASE("another backend has no such limit: the flag is a usage error there") {
    const auto r =
        run_swp("run " + quoted(plan.str()) + " --backend sim --iters 6 --max-host-streams 4");
    CHECK(r.status == 2);
    CHECK(r.err ==
          "error: --max-host-streams applies to --backend host only; sim starts no "
          "thread per stream and has no such limit\n");
  }
}

}  // namespace test_cli_run
