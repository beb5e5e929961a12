// `swp pp stages|groups|estimate|search|simulate`: the pipeline-parallel model of seed 002 and
// the event-level schedules, as the command line prints them.

#include <doctest/doctest.h>

#include <string>

#include "support/cli.hpp"
#include "support/plans.hpp"

namespace test_cli_pp {  // each test file's names apart (unity builds)

using swp::test::metric_values;
using swp::test::run_swp;
using swp::test::TempFile;

TEST_SUITE_BEGIN("cli pp");

namespace {

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("swp pp without a known subcommand names the ones it has") {
  auto r = run_swp("pp frob");
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: swp pp: unexpected argument 'frob'; name one of stages, groups, estimate, search, "
        "simulate (see swp pp --help)\n");
  r = run_swp("pp");
  CHECK(r.status == 2);
  CHECK(r.err.starts_with("error: swp pp: no subcommand given; name one of stages"));
}

TEST_CASE("swp pp stages prints the uniform partition, end exclusive") {
  auto r = run_swp("pp stages --layers 10 --stages 4");
  CHECK(r.status == 0);
  CHECK(r.out == "stage 0 0 3\nstage 1 3 6\nstage 2 6 9\nstage 3 9 10\n");
  r = run_swp("pp stages --layers 3 --stages 5");
  CHECK(r.out == "stage 0 0 1\nstage 1 1 2\nstage 2 2 3\nstage 3 3 3\nstage 4 3 3\n");
  r = run_swp("pp stages --layer-counts 2,5,0,3");
  CHECK(r.out == "stage 0 0 2\nstage 1 2 7\nstage 2 7 7\nstage 3 7 10\n");
  r = run_swp("pp stages --layers 10");
  CHECK(r.status == 2);
  CHECK(r.err == "error: swp pp stages: --layers requires --stages (see swp pp stages --help)\n");
  r = run_swp("pp stages --layers 4 --stages 0");
  CHECK(r.status == 2);
  CHECK(r.err.find("--stages") != std::string::npos);
  // Each count in range, their sum not: a usage error naming the flag (it was exit 1, unnamed).
  std::string counts = "1000000";
  for (int s = 1; s < 1001; ++s) counts += ",1000000";
  r = run_swp("pp stages --layer-counts " + counts);
  CHECK(r.status == 2);
  CHECK(r.err == "error: swp pp: --layer-counts: too many layers in the stage plan: 1001000000 "
                 "(at most 1000000000)\n");
}

TEST_CASE("swp pp groups prints the seed's example") {
  auto r = run_swp("pp groups --world 8 --tp 2 --pp 4 --dp 1 --rank 4");
  CHECK(r.status == 0);
  CHECK(r.out == "tp_group 4 5\ndp_group 4\npp_group 0 2 4 6\npp_rank_in_group 2\n");
  r = run_swp("pp groups --world 8 --tp 2 --pp 2 --dp 1 --rank 4");
  CHECK(r.status == 2);
  CHECK(r.err == "error: swp pp groups: world size 8 != tp 2 x pp 2 x dp 1 = 4\n");
}

TEST_CASE("swp pp estimate prints the fill-drain metrics and the breakdown line") {
  // 2 layers of 100 us per stage; message 2048 x 4096 x 2 B over 100 GB/s + 5 us = 172.77216 us.
  auto r = run_swp(
      "pp estimate --layers 8 --stages 4 --layer-us 100 --microbatches 4 --tokens 2048 "
      "--hidden 4096 --dtype-bytes 2 --bandwidth-gbps 100 --latency-us 5");
  REQUIRE(r.status == 0);
  auto m = metric_values(r.out);
  const double one_way = 5 + 16'777'216 / 1e5;
  const double slowest = 200 + 2 * one_way;
  CHECK(m["pp_compute_us"] == doctest::Approx(800));
  CHECK(m["pp_comm_us"] == doctest::Approx(6 * one_way));
  CHECK(m["latency_us"] == doctest::Approx(800 + 6 * one_way + 3 * slowest));
  CHECK(m["pp_bubble_us"] == doctest::Approx(3 * slowest));
  CHECK(r.out.find("\nPP Compute 23.03 | PP Comm 29.85 | PP Bubble 47.12\n") != std::string::npos);
  SUBCASE("one microbatch: no bubble") {
    r = run_swp("pp estimate --layers 8 --stages 4 --layer-us 100 --microbatches 1");
    m = metric_values(r.out);
    CHECK(m["latency_us"] == doctest::Approx(800));
    CHECK(m["pp_bubble_us"] == 0);
    CHECK(r.out.find("PP Compute 100.00 | PP Comm 0.00 | PP Bubble 0.00") != std::string::npos);
  }
  SUBCASE("one stage: no pipeline, so no bubble however many microbatches") {
    r = run_swp("pp estimate --layers 8 --stages 1 --layer-us 100 --microbatches 3");
    CHECK(r.status == 0);
    m = metric_values(r.out);
    CHECK(m["latency_us"] == doctest::Approx(3 * 800));  // the microbatches one after another
    CHECK(m["pp_bubble_us"] == 0);
    CHECK(r.out.find("PP Compute 100.00 | PP Comm 0.00 | PP Bubble 0.00") != std::string::npos);
  }
  SUBCASE("an explicit partition: the slowest stage sets the pace") {
    r = run_swp("pp estimate --layer-counts 1,3 --layer-us 10 --microbatches 2");
    m = metric_values(r.out);
    CHECK(m["latency_us"] == doctest::Approx(40 + 30));
    CHECK(m["pp_bubble_us"] == doctest::Approx(30));
  }
  r = run_swp("pp estimate --layers 8 --stages 4 --layer-us 100 --bandwidth-gbps 0");
  CHECK(r.status == 2);
  CHECK(r.err.find("--bandwidth-gbps: expected a number > 0, got '0'") != std::string::npos);
}

TEST_CASE("swp pp estimate refuses a partition with a stage that owns no layers (exit 2)") {
  // Seed 002 (2.4.2): with more stages than layers the trailing stages own no layers, and such
  // configurations are to be filtered out; the estimate charged them transfers of hidden states
  // that no stage computes (--layers 2 --stages 4: 6 one-way times for 2 layers).
  const auto refused = [](const std::string& flags, const std::string& message) {
    CAPTURE(flags);
    const auto r = run_swp("pp estimate " + flags + " --layer-us 100 --tokens 16 --hidden 16");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK_MESSAGE(r.err.starts_with("error: swp pp estimate: " + message), r.err);
  };
  SUBCASE("more stages than layers, both flags named") {
    refused("--layers 2 --stages 4",
            "--layers 2 --stages 4: stages 2..3 own no layers (uniform partition: ceil(2/4) = 1 "
            "layer a stage)");
  }
  SUBCASE("fewer stages than layers, but ceil leaves the last stages empty") {
    refused("--layers 6 --stages 5",
            "--layers 6 --stages 5: stages 3..4 own no layers (uniform partition: ceil(6/5) = 2 "
            "layers a stage)");
  }
  SUBCASE("one empty stage") {
    refused("--layers 5 --stages 4",
            "--layers 5 --stages 4: stage 3 owns no layers (uniform partition: ceil(5/4) = 2 "
            "layers a stage)");
  }
  SUBCASE("no layers at all") {
    refused("--layers 0 --stages 1", "--layers 0 --stages 1: stage 0 owns no layers");
  }
  SUBCASE("an explicit partition with an empty stage") {
    refused("--layer-counts 2,0,3", "--layer-counts 2,0,3: stage 1 owns no layers");
  }
  // The partition itself stays printable, as the seed defines it.
  const auto r = run_swp("pp stages --layers 2 --stages 4");
  CHECK(r.status == 0);
  CHECK(r.out == "stage 0 0 1\nstage 1 1 2\nstage 2 2 2\nstage 3 2 2\n");
}

TEST_CASE("swp pp estimate refuses results a number cannot hold, naming the flag") {
  // They printed `inf` and `-nan` and exited 0.
  const auto refused = [](const std::string& flags, const std::string& message) {
    CAPTURE(flags);
    const auto r = run_swp("pp estimate " + flags);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK_MESSAGE(r.err.starts_with("error: swp pp estimate: " + message), r.err);
    CHECK(r.err.find("inf") == std::string::npos);
  };
  refused("--layers 4 --stages 1 --layer-us 1e308",
          "--layer-us 1e+308: its product with a stage's layers is more than a number can hold");
  refused("--layers 2 --stages 2 --layer-us 1e308",
          "--layer-us 1e+308: the stages' compute time is more than a number can hold");
  refused("--layers 1000000 --stages 1 --layer-us 1e300 --microbatches 100000000",
          "--microbatches 100000000 times the slowest stage's 1e+306 us is more than a number "
          "can hold");
  refused("--layers 4 --stages 2 --layer-us 1 --tokens 1000000000 --hidden 1000000000 "
          "--bandwidth-gbps 1e-300",
          "a transfer (--latency-us 0 + --tokens 1000000000 x --hidden 1000000000 x "
          "--dtype-bytes 2 bytes over --bandwidth-gbps 1e-300) takes more time than a number "
          "can hold");
  // Large but finite: printed compactly, as every metric.
  const auto r = run_swp("pp estimate --layers 4 --stages 2 --layer-us 1e300 --microbatches 4");
  CHECK(r.status == 0);
  CHECK(r.out.starts_with("metric latency_us 1e+301 us\n"));
}

TEST_CASE("swp pp search lists tp x pp x dp = N and names invalid combinations") {
  auto r = run_swp("pp search --num-devices 8 --tp-sizes 1 2");
  CHECK(r.status == 0);
  CHECK(r.out == "tp=1 pp=1 dp=8\ntp=2 pp=1 dp=4\n");  // --pp-sizes absent: pp 1
  r = run_swp("pp search --num-devices 8 --tp-sizes 2 --pp-sizes");
  CHECK(r.out == "tp=2 pp=1 dp=4\ntp=2 pp=2 dp=2\ntp=2 pp=4 dp=1\n");  // empty: powers of two
  r = run_swp("pp search --num-devices 8 --pp-sizes 1,2");
  CHECK(lines(r.out) == 4 + 3);  // TP absent: powers of two; tp 8 x pp 2 does not divide
  r = run_swp("pp search --num-devices 8 --tp-sizes 3 --pp-sizes 5");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "error: swp pp search: no tp x pp x dp = 8 combination: tp=3 pp=5: 8 devices are not "
        "divisible by tp x pp = 15\n");
  r = run_swp("pp search --num-devices 8 --pp-sizes 16");
  CHECK(r.status == 2);
  CHECK(r.err == "error: swp pp search: --pp-sizes 16 must be in 1..8 (the device count)\n");
}

TEST_CASE("swp pp simulate measures the closed forms on the sim backend") {
  auto r =
      run_swp("pp simulate --schedule gpipe --stages 4 --microbatches 8 --fwd-us 1 --bwd-us 2");
  REQUIRE(r.status == 0);
  auto m = metric_values(r.out);
  CHECK(m["latency_us"] == doctest::Approx(33));
  CHECK(m["bubble_fraction"] == doctest::Approx(3.0 / 11));
  CHECK(m["fill_drain_latency_us"] == doctest::Approx(33));
  r = run_swp(
      "pp simulate --schedule interleaved --stages 4 --microbatches 8 --chunks 2 --fwd-us 4 "
      "--bwd-us 8");
  m = metric_values(r.out);
  CHECK(m["latency_us"] == doctest::Approx(8 * 12 + 3 * 12 / 2.0));
  CHECK(m["bubble_fraction"] == doctest::Approx(3.0 / 19));
}

TEST_CASE("swp pp simulate writes its timeline with the trace layer's writers") {
  const TempFile json("", ".json"), svg("", ".svg");
  const auto r = run_swp(
      "pp simulate --schedule 1f1b --stages 3 --microbatches 4 --fwd-us 2 "
      "--bwd-us 4 --comm-us 1 --trace " +
      json.str() + " --svg " + svg.str());
  REQUIRE(r.status == 0);
  const auto trace = swp::test::read_text(json.path());
  CHECK(trace.find("\"backend\":\"sim\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"stream stage 2\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"B/3\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"send F/0\"") != std::string::npos);
  const auto picture = swp::test::read_text(svg.path());
  CHECK(picture.find("data-name=\"stage 0\"") != std::string::npos);
  CHECK(picture.find("data-name=\"link 1-&gt;0\"") != std::string::npos);
  CHECK(picture.find("1f1b: 3 stages, 4 microbatches (sim backend)") != std::string::npos);
}

TEST_CASE("swp pp simulate reports a deadlock and bad schedules in one error line") {
  auto r = run_swp(
      "pp simulate --schedule 1f1b --stages 4 --microbatches 8 --fwd-us 1 "
      "--bwd-us 2 --send-mode rendezvous");
  CHECK(r.status == 1);
  CHECK(lines(r.err) == 1);
  CHECK(
      r.err.starts_with("error: the pipeline schedule deadlocks: 4 rank(s) can never finish; "
                        "rank 0 at action 7 (send F3 to rank 1) waits for rank 1"));
  r = run_swp(
      "pp simulate --schedule interleaved --stages 4 --microbatches 6 --fwd-us 1 --bwd-us 2");
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: swp pp simulate: the interleaved schedule needs the microbatch count (6) to be a "
        "multiple of the stage count (4)\n");
  r = run_swp("pp simulate --schedule gpipe --stages 3 --microbatches 2 --fwd-us 1,2 --bwd-us 2");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --fwd-us has 2 values; give one, or one per stage (3)\n");
  r = run_swp(
      "pp simulate --schedule interleaved --stages 4096 --microbatches 4096 --chunks 2 "
      "--fwd-us 1 --bwd-us 2");
  CHECK(r.status == 2);
  CHECK(r.err ==
        "error: swp pp simulate: --stages x --microbatches x --chunks = 33554432 is more than the "
        "4194304 computes one run may simulate (so that it fits in 1 GB of memory)\n");
  r = run_swp("pp simulate --schedule zb --stages 3 --microbatches 2 --fwd-us 1 --bwd-us 2");
  CHECK(r.status == 2);
  CHECK(r.err.find("--schedule") != std::string::npos);
}

TEST_CASE("swp pp simulate holds memory to its limit and refuses times past its clock") {
  SUBCASE("a million work items in 128 MiB: ~27 bytes each, not ~380") {
    // 256 stages x 1024 microbatches: 524288 computes, their transfers, 1046528 work items.
    const auto r = run_swp(
        "pp simulate --schedule 1f1b --stages 256 --microbatches 1024 --fwd-us 1 --bwd-us 2",
        swp::test::memory_cap_mib(128) + "ulimit -t 120;");
    CHECK(r.status == 0);
    const auto m = metric_values(r.out);
    CHECK(m.at("work_items") == 1046528);
    CHECK(m.at("latency_us") == doctest::Approx((1024 + 256 - 1) * 3));
  }
  SUBCASE("a timeline has a lower limit, stated") {
    const TempFile svg("", ".svg");
    const auto r = run_swp(
        "pp simulate --schedule 1f1b --stages 4096 --microbatches 1024 --fwd-us 1 --bwd-us 2 "
        "--svg " + svg.str());
    CHECK(r.status == 2);
    CHECK(r.err ==
          "error: swp pp simulate: --stages x --microbatches x --chunks = 4194304 is more than "
          "the 262144 computes one run may simulate with --trace or --svg (so that it fits in 1 "
          "GB of memory)\n");
  }
  SUBCASE("times past the simulated clock, and numbers past 1e12, name the flags") {
    // 4e17 us one after another overflowed the nanosecond clock: latency 9.2e15, bubble 1.3.
    auto r = run_swp(
        "pp simulate --schedule gpipe --stages 2 --microbatches 100000 --fwd-us 1e12 "
        "--bwd-us 1e12");
    CHECK(r.status == 2);
    CHECK(r.err ==
          "error: swp pp simulate: the schedule's work adds up to 4e+17 us one item after "
          "another, more than the 1e+15 us a simulation may span; lower --fwd-us, --bwd-us, "
          "--comm-us or --microbatches\n");
    // It exited 1 printing 1e300 as 301 digits.
    r = run_swp("pp simulate --schedule gpipe --stages 2 --microbatches 2 --fwd-us 1 --bwd-us 1 "
                "--comm-us 1e300");
    CHECK(r.status == 2);
    CHECK(r.err.starts_with(
        "error: swp pp simulate: --comm-us: expected a number in [0, 1e+12], got '1e300'"));
  }
}

}  // namespace test_cli_pp
