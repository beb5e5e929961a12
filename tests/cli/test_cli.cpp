// The `swp` command line, run as a separate process: output, exit codes, stdin, usage errors.

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/names.hpp"
#include "support/plans.hpp"
#include "support/text.hpp"

namespace test_cli {  // each test file's names apart (unity builds)

using swp::test::contains;
using swp::test::quoted;
using swp::test::Result;
using swp::test::run_swp;
using swp::test::TempFile;

using swp::test::lines_of;

namespace {

std::string seed(const std::string& name) { return swp::test::seed_plan_path(name).string(); }

// Every stderr line is a prefixed diagnostic.
void check_diagnostics(const std::string& err) {
  for (const auto& line : lines_of(err)) {
    CAPTURE(line);
    CHECK((line.starts_with("error: ") || line.starts_with("warning: ")));
  }
}

// The P/Q/R/A plan exactly as the seed writes it: R intra-depends on Q one stage above it.
const char* const pqra_json = R"({
  "tasks": [
    {"name": "P", "stage": 0, "stream": "X"},
    {"name": "Q", "stage": 1, "stream": "Y"},
    {"name": "R", "stage": 0, "stream": "X"},
    {"name": "A", "stage": 0, "stream": "Z"}
  ],
  "intra_iter_deps": [["Q", "P"], ["R", "Q"]],
  "inter_iter_deps": [["A", "Q"]]
})";

const std::string sparse_dist_ready_first =
    "H2D\nInputDistStart\nInputDistWait\nZeroGrad\nWaitBatch\nForward\nBackward\nOptimizerStep\n";

}  // namespace

TEST_CASE("swp validate accepts every seed plan with an ok line") {
  const auto r = run_swp("validate " + quoted(seed("sparse_dist")));
  CHECK(r.status == 0);
  CHECK(r.out == "ok: 8 tasks, depth 3\n");
  CHECK(r.err.empty());

  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto each = run_swp("validate " + quoted(seed(name)));
    CHECK(each.status == 0);
    CHECK(each.out.starts_with("ok: "));
  }
}

TEST_CASE("swp validate rejects a broken plan with exit 1, one error line naming every violation") {
  const TempFile plan(R"({
    "tasks": [{"name": "Load", "stage": 0}, {"name": "Load", "stage": 1},
              {"name": "Early", "stage": 0}, {"name": "Late", "stage": 2}],
    "intra_iter_deps": [["Early", "Late"]]
  })");
  const auto r = run_swp("validate " + quoted(plan.str()));
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  check_diagnostics(r.err);
  // One `error:` line (DESIGN.md's contract), the violations joined with "; " (it printed one
  // line each).
  const auto errors = lines_of(r.err);
  CHECK(errors.size() == 1);
  CHECK(contains(r.err, "; "));
  CHECK(contains(r.err, "error: duplicate name"));
  CHECK(contains(r.err, "'Load'"));
  CHECK(contains(r.err, "; corollary 1: "));
  CHECK(contains(r.err, "'Early'"));
  CHECK(contains(r.err, "'Late'"));
}

TEST_CASE("an unreadable plan file exits 1 with an error naming the file and place") {
  SUBCASE("malformed JSON") {
    const TempFile plan("{\n  \"tasks\": [\n    {\"name\": \"H2D\" \"stage\": 0}\n  ]\n}\n");
    const auto r = run_swp("order " + quoted(plan.str()));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err.starts_with("error: " + plan.str() + ":3:20: malformed JSON"));
  }
  SUBCASE("a field of the wrong type") {
    const TempFile plan(R"({"tasks": [{"name": "H2D", "stage": "two"}]})");
    const auto r = run_swp("validate " + quoted(plan.str()));
    CHECK(r.status == 1);
    CHECK(contains(r.err, "error: " + plan.str() + ": tasks[0] (H2D).stage: expected an integer"));
  }
}

TEST_CASE("an unknown key is a warning and the command still succeeds") {
  const TempFile plan(R"({"tasks": [{"name": "A", "stgae": 1}]})");
  const auto r = run_swp("validate " + quoted(plan.str()));
  CHECK(r.status == 0);
  CHECK(r.out == "ok: 1 tasks, depth 1\n");
  CHECK(contains(r.err, "warning: "));
  CHECK(contains(r.err, "stgae"));
  CHECK_FALSE(contains(r.err, "error:"));
}

TEST_CASE("swp order prints one task a line in the chosen policy's order") {
  SUBCASE("ready-first by default, as the pseudocode orders it") {
    const auto r = run_swp("order " + quoted(seed("sparse_dist")));
    CHECK(r.status == 0);
    CHECK(r.out == sparse_dist_ready_first);
    CHECK(r.err.empty());
  }
  SUBCASE("ready-first named explicitly") {
    const auto r = run_swp("order --policy ready-first " + quoted(seed("sparse_dist")));
    CHECK(r.status == 0);
    CHECK(r.out == sparse_dist_ready_first);
  }
  SUBCASE("stage-descending") {
    const auto r = run_swp("order " + quoted(seed("sparse_dist")) + " --policy stage-descending");
    CHECK(r.status == 0);
    CHECK(r.out ==
          "ZeroGrad\nWaitBatch\nForward\nBackward\nOptimizerStep\nInputDistStart\n"
          "InputDistWait\nH2D\n");
  }
}

TEST_CASE("a plan argument of - reads standard input") {
  SUBCASE("through a pipe") {
    const auto r = run_swp("order -", "cat " + quoted(seed("sparse_dist")) + " |");
    CHECK(r.status == 0);
    CHECK(r.out == sparse_dist_ready_first);
  }
  SUBCASE("through a redirection, for every subcommand") {
    const std::string from_file = "< " + quoted(seed("sparse_dist"));
    CHECK(run_swp("validate - " + from_file).out == "ok: 8 tasks, depth 3\n");
    CHECK(run_swp("schedule - --periods 5 " + from_file).out ==
          swp::test::read_text(swp::test::seed_table_path("sparse_dist")));
    CHECK(contains(run_swp("analyze - " + from_file).out, "LDS = 3"));
  }
  SUBCASE("errors name <stdin>") {
    const auto r = run_swp("validate -", "printf '{\"tasks\": 3}' |");
    CHECK(r.status == 1);
    CHECK(contains(r.err, "error: <stdin>: tasks: expected an array"));
  }
}

TEST_CASE("swp schedule prints the seed tables byte for byte") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto expected = swp::test::read_text(swp::test::seed_table_path(name));
    const int periods = name == "semi_sync" ? 6 : 5;
    REQUIRE(contains(lines_of(expected).at(0), swp::test::numbered("P", periods - 1)));
    REQUIRE_FALSE(contains(lines_of(expected).at(0), swp::test::numbered("P", periods)));
    const auto r = run_swp("schedule " + quoted(seed(name)) + " --periods " +
                           std::to_string(periods));
    CHECK(r.status == 0);
    CHECK(r.out == expected);
    CHECK(r.err.empty());
  }
}

TEST_CASE("swp schedule --shortcut marks tasks and rejects unknown names") {
  SUBCASE("known tasks, comma-separated and repeated") {
    const auto r = run_swp("schedule " + quoted(seed("sparse_dist")) +
                           " --periods 3 --shortcut H2D,ZeroGrad --shortcut Forward");
    CHECK(r.status == 0);
    const auto lines = lines_of(r.out);
    REQUIRE(lines.size() == 10);
    CHECK(lines[2] == "   0  ZeroGrad [skip]    default  default       |  --    --     .");
    CHECK(lines[4] == "   2  Forward [skip]     default  default       |  --    --     .");
    CHECK(lines[9] == "   7  H2D [skip]         default  memcpy        |   .     .     .");
    CHECK(lines[3] == "   1  WaitBatch          default  default       |  --    --   i0");
  }
  SUBCASE("an unknown task is a usage error") {
    const auto r = run_swp("schedule " + quoted(seed("sparse_dist")) +
                           " --periods 3 --shortcut Nobody");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "error: "));
    CHECK(contains(r.err, "Nobody"));
  }
}

TEST_CASE("swp analyze prints the stage analysis") {
  SUBCASE("stage-descending by default") {
    const auto r = run_swp("analyze " + quoted(seed("sparse_dist")));
    CHECK(r.status == 0);
    CHECK(r.out.starts_with("Task schedule (topological order, stage-descending):\n"));
    CHECK(contains(r.out, "LDS = 3 (example: (2, 1, 0): "));
    CHECK(contains(r.out, "Pipeline depth = 3\n"));
    CHECK(contains(r.out, "\u2713 LDS == depth (Dilworth-optimal)"));
  }
  SUBCASE("ready-first") {
    const auto r = run_swp("analyze --policy ready-first " + quoted(seed("sparse_dist")));
    CHECK(r.status == 0);
    CHECK(contains(r.out, "(topological order, ready-first)"));
    CHECK(contains(r.out, "LDS = 1 "));
    CHECK(contains(r.out, "\u2717 LDS (1) < depth (3)"));
  }
}

TEST_CASE("the seed's P/Q/R/A plan orders with a warning but does not validate") {
  const TempFile plan(pqra_json);
  SUBCASE("swp order prints P Q R A and warns about corollary 1") {
    const auto r = run_swp("order " + quoted(plan.str()));
    CHECK(r.status == 0);
    CHECK(r.out == "P\nQ\nR\nA\n");
    check_diagnostics(r.err);
    CHECK(contains(r.err, "warning: corollary 1"));
    CHECK(contains(r.err, "'R'"));
    CHECK(contains(r.err, "'Q'"));
    CHECK_FALSE(contains(r.err, "error:"));
  }
  SUBCASE("stage-descending puts Q first, then stage 0 by name") {
    const auto r = run_swp("order --policy stage-descending " + quoted(plan.str()));
    CHECK(r.status == 0);
    CHECK(r.out == "Q\nA\nP\nR\n");
  }
  SUBCASE("schedule and analyze work on it too") {
    CHECK(run_swp("schedule " + quoted(plan.str()) + " --periods 2").status == 0);
    CHECK(run_swp("analyze " + quoted(plan.str())).status == 0);
  }
  SUBCASE("swp validate rejects it") {
    const auto r = run_swp("validate " + quoted(plan.str()));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "error: corollary 1"));
    CHECK(contains(r.err, "'R'"));
  }
}

TEST_CASE("order, schedule and analyze refuse structurally broken plans with exit 1") {
  const TempFile plan(R"({"tasks": [{"name": "A"}, {"name": "B"}],
                          "intra_iter_deps": [["A", "B"], ["B", "A"]]})");
  for (const std::string command : {"order", "schedule --periods 2", "analyze", "validate"}) {
    CAPTURE(command);
    const auto r = run_swp(command + " " + quoted(plan.str()));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "error: intra-iteration cycle: A -> B -> A"));
    check_diagnostics(r.err);
  }
}

TEST_CASE("bad usage exits 2") {
  const std::string plan = quoted(seed("sparse_dist"));
  std::string args;
  SUBCASE("no subcommand") { args = ""; }
  SUBCASE("an unknown subcommand") { args = "frobnicate " + plan; }
  SUBCASE("an unknown flag") { args = "order --fast " + plan; }
  SUBCASE("a missing plan argument") { args = "order"; }
  SUBCASE("a missing plan file") { args = "validate /nonexistent/plan.json"; }
  SUBCASE("schedule without --periods") { args = "schedule " + plan; }
  SUBCASE("--periods 0") { args = "schedule " + plan + " --periods 0"; }
  SUBCASE("--periods -1") { args = "schedule " + plan + " --periods -1"; }
  SUBCASE("--periods that is not a number") { args = "schedule " + plan + " --periods five"; }
  SUBCASE("an unknown --policy for order") { args = "order " + plan + " --policy fifo"; }
  SUBCASE("an unknown --policy for analyze") { args = "analyze " + plan + " --policy fifo"; }
  CAPTURE(args);
  const auto r = run_swp(args);
  CHECK(r.status == 2);
  CHECK(r.out.find("ZeroGrad") == std::string::npos);  // nothing was done
  CHECK_FALSE(r.err.empty());
}

TEST_CASE("--help works on every subcommand and exits 0") {
  for (const std::string command : {"", "validate", "order", "schedule", "analyze"}) {
    CAPTURE(command);
    const auto r = run_swp(command + " --help");
    CHECK(r.status == 0);
    const auto text = r.out + r.err;
    CHECK(contains(text, "Usage"));
    if (!command.empty()) CHECK(contains(text, command));
  }
  const auto schedule_help = run_swp("schedule --help");
  CHECK(contains(schedule_help.out + schedule_help.err, "--periods"));
  const auto order_help = run_swp("order --help");
  CHECK(contains(order_help.out + order_help.err, "--policy"));
}

TEST_CASE("--version prints the version and exits 0") {
  const auto r = run_swp("--version");
  CHECK(r.status == 0);
  CHECK(contains(r.out + r.err, "0."));
}

namespace {

// The value of `metric NAME VALUE UNIT` in `out`; fails the test when the line is missing.
double metric_value(const std::string& out, const std::string& name) {
  for (const auto& line : lines_of(out)) {
    std::istringstream in(line);
    std::string word, key, unit;
    double value = 0;
    if (in >> word >> key >> value >> unit && word == "metric" && key == name) return value;
  }
  FAIL("no metric line for ", name, " in:\n", out);
  return 0;
}

std::string data_plan(const std::string& name) {
  return (std::filesystem::path(SWP_TEST_DATA) / "plans" / name).string();
}

}  // namespace

TEST_CASE("swp run prints the contract's metric lines") {
  const auto r = run_swp("run " + quoted(data_plan("three_stage.json")) +
                         " --engine clock --backend sim --iters 100");
  REQUIRE(r.status == 0);
  CHECK(metric_value(r.out, "bound_us_per_iter") == doctest::Approx(1000));
  CHECK(metric_value(r.out, "us_per_iter") > 0);
  CHECK(metric_value(r.out, "efficiency") > 0);
  CHECK(metric_value(r.out, "iterations") == 100);
}

TEST_CASE("on the sim backend both engines reach the 3-stage bound") {
  for (const char* engine : {"clock", "dataflow"}) {
    CAPTURE(engine);
    const auto r = run_swp("run " + quoted(data_plan("three_stage.json")) + " --engine " + engine +
                           " --backend sim --iters 300");
    REQUIRE(r.status == 0);
    CHECK(metric_value(r.out, "efficiency") >= 0.999);
  }
}

TEST_CASE("stream aliases: swp run shares the target stream, swp validate names a bad alias") {
  // Two independent 100 us device tasks: side by side on two streams, one after the other when
  // "b" is an alias of "a" (the bound is then the one stream's 200 us).
  auto plan = [](const std::string& aliases) {
    return R"({"tasks": [{"name": "A", "stream": "a", "cpu_us": 1, "device_us": 100},
                         {"name": "B", "stream": "b", "cpu_us": 1, "device_us": 100}])" +
           aliases + "}";
  };
  const TempFile separate(plan(""));
  const TempFile shared(plan(R"(, "stream_aliases": {"b": "a"})"));
  const auto two = run_swp("run " + quoted(separate.str()) + " --backend sim --iters 100");
  const auto one = run_swp("run " + quoted(shared.str()) + " --backend sim --iters 100");
  REQUIRE(two.status == 0);
  REQUIRE(one.status == 0);
  CHECK(metric_value(two.out, "bound_us_per_iter") == doctest::Approx(100));
  CHECK(metric_value(one.out, "bound_us_per_iter") == doctest::Approx(200));
  CHECK(metric_value(one.out, "us_per_iter") >= 200);
  CHECK(metric_value(two.out, "us_per_iter") < 150);

  const TempFile chain(plan(R"(, "stream_aliases": {"b": "a", "a": "c"})"));
  const auto r = run_swp("validate " + quoted(chain.str()));
  CHECK(r.status == 1);
  CHECK(contains(r.err, "error: stream alias: 'b' -> 'a': 'a' is itself an alias (of 'c')"));
}

TEST_CASE("with a jittering loader on sim, data-flow at depth 6 absorbs it and beats clock") {
  const auto plan = quoted(data_plan("three_stage_jitter.json"));
  const auto flow = run_swp("run " + plan + " --engine dataflow --max-depth 6 --backend sim --iters 300");
  const auto clock = run_swp("run " + plan + " --engine clock --backend sim --iters 300");
  REQUIRE(flow.status == 0);
  REQUIRE(clock.status == 0);
  CHECK(metric_value(flow.out, "efficiency") >= 0.97);
  CHECK(metric_value(flow.out, "efficiency") > metric_value(clock.out, "efficiency"));
}

TEST_CASE("swp run rejects bad usage with exit 2 and invalid plans with exit 1") {
  const auto plan = quoted(data_plan("three_stage.json"));
  CHECK(run_swp("run " + plan + " --engine clock --max-depth 4").status == 2);
  CHECK(run_swp("run " + plan + " --engine warp").status == 2);
  CHECK(run_swp("run " + plan + " --backend gpu").status == 2);
  CHECK(run_swp("run " + plan + " --iters 0").status == 2);
  const TempFile bad(R"({"tasks": [{"name": "A", "stage": 0}, {"name": "B", "stage": 2}],
                         "inter_iter_deps": [["A", "B"]]})", ".json");
  const auto r = run_swp("run " + quoted(bad.str()) + " --backend sim");
  CHECK(r.status == 1);
  CHECK(contains(r.err, "corollary 3"));
}

}  // namespace test_cli
