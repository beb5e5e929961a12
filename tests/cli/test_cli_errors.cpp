// The error contract of the `swp` command line (DESIGN.md): every non-zero exit prints exactly
// one `error: ...` line on stderr naming the offending thing, usage errors exit 2, invalid
// plans exit 1, and help and version requests exit 0 with nothing on stderr.

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/plans.hpp"

using swp::test::quoted;
using swp::test::run_swp;
using swp::test::TempFile;

using swp::test::lines_of;

namespace {

// Exactly one `error: ` line, which names `offender`; any other stderr line is a warning.
void check_one_error(const swp::test::Result& r, const std::string& offender) {
  CAPTURE(r.err);
  int errors = 0;
  for (const auto& line : lines_of(r.err)) {
    CAPTURE(line);
    CHECK((line.starts_with("error: ") || line.starts_with("warning: ")));
    if (!line.starts_with("error: ")) continue;
    ++errors;
    CHECK(line.find(offender) != std::string::npos);
    CHECK(line.size() < 400);  // a sentence, not a dump
  }
  CHECK(errors == 1);
}

std::string plan_path() { return (swp::test::data_dir() / "plans" / "three_stage.json").string(); }

}  // namespace

TEST_CASE("every usage error exits 2 with one error line naming the offending argument") {
  const std::string plan = quoted(plan_path());
  struct Case {
    std::string args, offender;
  };
  const std::vector<Case> cases = {
      {"", "subcommand"},
      {"frobnicate " + plan, "'frobnicate'"},
      {"frobnicate --help", "'frobnicate'"},
      {"order --fast " + plan, "--fast"},
      {"order " + plan + " extra", "extra"},
      {"validate " + plan + " " + plan, "three_stage.json"},
      {"order", "PLAN"},
      {"validate /nonexistent/plan.json", "/nonexistent/plan.json"},
      {"schedule " + plan, "--periods"},
      {"schedule " + plan + " --periods 0", "--periods"},
      {"schedule " + plan + " --periods five", "five"},
      {"schedule " + plan + " --periods 2 --shortcut Nobody", "Nobody"},
      {"order " + plan + " --policy fifo", "fifo"},
      {"run " + plan + " --iters 0", "--iters"},
      {"run " + plan + " --engine warp", "warp"},
      {"run " + plan + " --engine clock --max-depth 4", "--max-depth"},
      {"run " + plan + " --trace /nonexistent/dir/t.json", "/nonexistent/dir/t.json"},
      {"preset semi_sync --start-batch -1", "--start-batch"},
      {"preset pt2 --compile-on-iter 0", "--compile-on-iter"},
      {"preset nonesuch", "nonesuch"},
      {"preset", "preset"},
      {"tune " + plan + " --costless-on cpu", "--costless-on"},
      {"profile " + plan + " --skip Nobody", "Nobody"},
      {"--bogus", "--bogus"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run_swp(c.args);
    CHECK(r.status == 2);
    check_one_error(r, c.offender);
  }
}

TEST_CASE("an invalid plan exits 1 with one error line naming the file and the offending task") {
  SUBCASE("an unknown task") {
    const TempFile plan(R"({"tasks": [{"name": "A"}], "intra_iter_deps": [["A", "Nobody"]]})",
                        ".json");
    for (const std::string command : {"validate", "order", "run"}) {
      CAPTURE(command);
      const auto r = run_swp(command + " " + quoted(plan.str()));
      CHECK(r.status == 1);
      check_one_error(r, "'Nobody'");
      check_one_error(r, plan.str());
    }
  }
  SUBCASE("a broken rule") {
    const TempFile plan(R"({"tasks": [{"name": "A", "stage": 0}, {"name": "B", "stage": 2}],
                            "inter_iter_deps": [["A", "B"]]})",
                        ".json");
    const auto r = run_swp("run " + quoted(plan.str()) + " --backend sim");
    CHECK(r.status == 1);
    check_one_error(r, plan.str());
  }
  SUBCASE("a plan read from standard input is named <stdin>") {
    const auto r = run_swp("validate -",
                           "printf '{\"tasks\": [{\"name\": \"A\"}], "
                           "\"intra_iter_deps\": [[\"Nobody\", \"A\"]]}' |");
    CHECK(r.status == 1);
    check_one_error(r, "<stdin>");
  }
}

TEST_CASE("help and version exit 0 on standard output with nothing on stderr") {
  for (const std::string args :
       {"--help", "-h", "validate --help", "run --help", "tune --help", "preset --help",
        "profile --help", "schedule --help", "--version"}) {
    CAPTURE(args);
    const auto r = run_swp(args);
    CHECK(r.status == 0);
    CHECK_FALSE(r.out.empty());
    CHECK(r.err.empty());
  }
}

TEST_CASE("stages and costs beyond the documented limits are refused by every command") {
  // Stage numbers once made commands allocate or loop per stage (gigabytes for 1e9), and costs
  // of 1e12 or 1e16 us overflowed the clock arithmetic. `ulimit -t` keeps a regression from
  // hanging the suite.
  struct Case {
    std::string json, task, field;
  };
  const std::vector<Case> cases = {
      {R"({"tasks": [{"name": "A", "stage": 1000000000}]})", "'A'", "stage"},
      {R"({"tasks": [{"name": "A", "stage": 2147483647}]})", "'A'", "stage"},
      {R"({"tasks": [{"name": "A", "stage": 1000000}, {"name": "B", "stage": 0}]})", "'A'",
       "stage"},
      {R"({"tasks": [{"name": "A", "stage": 4096}]})", "'A'", "stage"},
      {R"({"tasks": [{"name": "A", "cpu_us": 1e16}]})", "'A'", "cpu_us"},
      {R"({"tasks": [{"name": "A", "device_us": 1e12}]})", "'A'", "device_us"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.json);
    const TempFile plan(c.json, ".json");
    const bool stage = c.field == "stage";
    for (const std::string command :
         {"validate", "run --backend sim", "run --backend sim --engine clock", "tune", "profile",
          "order", "analyze", "schedule --periods 3"}) {
      CAPTURE(command);
      const bool refuses = stage || command == "validate" || command.starts_with("run") ||
                           command == "tune" || command == "profile";
      const auto r = run_swp(command + " " + quoted(plan.str()), "ulimit -t 60;");
      if (refuses) {
        CHECK(r.status == 1);
        check_one_error(r, c.task);
        check_one_error(r, c.field);
      } else {  // a cost does not make a plan meaningless to print: a warning
        CHECK(r.status == 0);
        CHECK(r.err.find("warning: ") != std::string::npos);
      }
    }
  }
}

TEST_CASE("the largest stage within the limit is accepted") {
  const TempFile plan(R"({"tasks": [{"name": "A", "stage": 4095}, {"name": "B"}]})", ".json");
  const auto r = run_swp("validate " + quoted(plan.str()));
  CHECK(r.status == 0);
  CHECK(r.out == "ok: 2 tasks, depth 4096\n");
}
