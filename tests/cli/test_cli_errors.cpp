// The error contract of the `swp` command line (DESIGN.md): every non-zero exit prints exactly
// one `error: ...` line on stderr naming the offending thing, usage errors exit 2, invalid
// plans exit 1, and help and version requests exit 0 with nothing on stderr.

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/plans.hpp"
#include "swp/config.hpp"
#if SWP_HAVE_CUDA
#include "swp/device/cuda/cuda_device.hpp"
#endif

namespace test_cli_errors {  // each test file's names apart (unity builds)

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
      // A directory is no plan file, and says so (it was "plan file not found").
      {"validate /", "is a directory"},
      // Not a number is not "not in range".
      {"run " + plan + " --workers Forward", "'Forward', not a number"},
      {"run " + plan + " --workers 999", "0..256"},
      // A known backend that this build lacks says so; an unknown one is named.
      {"run " + plan + " --backend tpu", "unknown backend 'tpu'"},
      {"profile " + plan + " --backend tpu", "unknown backend 'tpu'"},
      // A stage named twice makes no plan: a usage error of the flag (it exited 1).
      {"preset staged --stages a,a", "--stages: stage 'a' is given twice"},
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

TEST_CASE("a plan file that exists but cannot be read exits 2 naming it") {
  const TempFile plan(R"({"tasks": [{"name": "A"}]})", ".json");
  // Root reads any file whatever its mode: run as nobody, where there is one.
  if (::geteuid() != 0) {
    std::filesystem::permissions(plan.path(), std::filesystem::perms::none);
    const auto r = run_swp("validate " + quoted(plan.str()));
    CHECK(r.status == 2);
    check_one_error(r, plan.str());
    std::filesystem::permissions(plan.path(), std::filesystem::perms::owner_read |
                                                  std::filesystem::perms::owner_write);
    return;
  }
  const std::string as_nobody = "runuser -u nobody -- ";
  if (std::system("command -v runuser >/dev/null 2>&1") != 0 ||
      std::system((as_nobody + "test -x " + quoted(SWP_CLI_PATH) + " 2>/dev/null").c_str()) != 0) {
    MESSAGE("skipped: no unprivileged user that can run " SWP_CLI_PATH);
    return;
  }
  std::filesystem::permissions(plan.path(), std::filesystem::perms::owner_read |
                                                std::filesystem::perms::owner_write);
  const auto r = run_swp("validate " + quoted(plan.str()), as_nobody);
  CHECK(r.status == 2);
  check_one_error(r, "cannot open plan file");
}

TEST_CASE("a plan from a FIFO (a process substitution) is read, an endless input is refused") {
  SUBCASE("bash's <(...)") {
    // It was refused as "plan file not found: /dev/fd/63".
    const std::string command =
        "bash -c " + quoted(quoted(SWP_CLI_PATH) + " validate <(cat " + quoted(plan_path()) +
                            ") >/dev/null 2>&1");
    const int raw = std::system(command.c_str());
    REQUIRE(WIFEXITED(raw));
    CHECK(WEXITSTATUS(raw) == 0);
  }
  SUBCASE("/dev/zero on standard input ends with an error") {
    const auto r = run_swp("validate -", "</dev/zero");
    CHECK(r.status == 1);
    check_one_error(r, "larger than any plan");
  }
}

TEST_CASE("an input past the 256 MiB plan bound is refused within that much memory") {
  // The reader held the text in a string that doubled past 256 MiB: 532 MB at its peak, so a
  // cap of 400 MiB ended it in std::bad_alloc instead of the bound's error.
  SUBCASE("/dev/zero, named or on standard input") {
    for (const std::string& input : {std::string("/dev/zero"), std::string("- </dev/zero")}) {
      CAPTURE(input);
      const auto r = run_swp("validate " + input, swp::test::memory_cap_mib(400) + "ulimit -t 60;");
      CHECK(r.status == 1);
      check_one_error(r, "more than 256 MiB: larger than any plan swp reads");
    }
  }
  SUBCASE("a regular file larger than the bound is refused before it is read") {
    const TempFile plan("");
    std::filesystem::resize_file(plan.path(), (std::uintmax_t{256} << 20) + 1);  // sparse
    const auto r =
        run_swp("validate " + quoted(plan.str()), swp::test::memory_cap_mib(64) + "ulimit -t 60;");
    CHECK(r.status == 1);
    check_one_error(r, plan.str() + ": more than 256 MiB");
  }
}

TEST_CASE("a command whose standard output cannot be written exits 1 with one error line") {
  if (!std::filesystem::exists("/dev/full")) {
    MESSAGE("skipped: no /dev/full on this machine");
    return;
  }
  const std::string plan = quoted(plan_path());
  // Every kind of output: std::cout (validate, order, schedule, analyze, preset, tune), printf
  // (pp, run, data gen), CLI11's help and version.
  const std::vector<std::string> commands = {
      "validate " + plan,
      "order " + plan,
      "schedule " + plan + " --periods 4",
      "analyze " + plan,
      "preset --list",
      "preset sparse_dist",
      "run " + plan + " --backend sim --iters 8",
      "profile " + plan + " --measure 2 --rounds 1",
      "tune " + plan + " --iters 8 --search-iters 4",
      "pp stages --layers 8 --stages 4",
      "pp estimate --layers 8 --stages 4 --layer-us 10",
      "pp simulate --schedule 1f1b --stages 4 --microbatches 8 --fwd-us 1 --bwd-us 2",
      "--help",
      "--version",
  };
  for (const auto& command : commands) {
    CAPTURE(command);
    const auto r = run_swp(command + " >/dev/full");
    CHECK(r.status == 1);
    CAPTURE(r.err);
    // swp tune writes its metric lines to stderr (the plan goes to stdout): those may stay.
    std::vector<std::string> errors;
    for (const auto& line : lines_of(r.err))
      if (line.starts_with("error: ")) errors.push_back(line);
    CHECK(errors == std::vector<std::string>{"error: writing standard output: No space left on device"});
  }
  SUBCASE("standard output closed") {
    const auto r = run_swp("validate " + plan + " >&-");
    CHECK(r.status == 1);
    check_one_error(r, "writing standard output: Bad file descriptor");
  }
  SUBCASE("a command that failed keeps its own one error line") {
    const TempFile broken(R"({"tasks": [{"name": "A", "stage": 1}, {"name": "B", "stage": 0}],
                             "intra_iter_deps": [["B", "A"]]})");
    const auto r = run_swp("validate " + quoted(broken.str()) + " >/dev/full");
    CHECK(r.status == 1);
    check_one_error(r, "corollary 1");
  }
}

TEST_CASE("a key given twice and a name with a control character exit 1 naming where") {
  SUBCASE("a duplicate key, with its line and column") {
    const TempFile plan("{\"tasks\": [{\"name\": \"A\", \"cpu_us\": -1, \"cpu_us\": 1}]}", ".json");
    const auto r = run_swp("validate " + quoted(plan.str()));
    CHECK(r.status == 1);
    check_one_error(r, plan.str() + ":1:40: duplicate key \"cpu_us\"");
  }
  SUBCASE("a newline in a name, which would break swp order's one name per line") {
    const TempFile plan(R"({"tasks": [{"name": "A\nB"}]})", ".json");
    const auto r = run_swp("order " + quoted(plan.str()));
    CHECK(r.status == 1);
    check_one_error(r, "tasks[0].name");
    CHECK(r.out.empty());
  }
}

TEST_CASE("a backend this build does not have is named as not compiled in") {
#if SWP_HAVE_CUDA
  MESSAGE("skipped: this build has the cuda backend");
#else
  const auto r = run_swp("run " + quoted(plan_path()) + " --backend cuda");
  CHECK(r.status == 2);
  check_one_error(r, "the cuda backend is not compiled into this build");
#endif
}

TEST_CASE("--backend cuda on a machine without a usable GPU fails naming the CUDA call") {
#if SWP_HAVE_CUDA
  if (swp::CudaDevice::count() > 0) {
    MESSAGE("skipped: this machine has a GPU");
    return;
  }
  const auto r = run_swp("run " + quoted(plan_path()) + " --backend cuda --iters 4");
  CHECK(r.status == 1);
  check_one_error(r, "cudaGetDeviceCount failed for the cuda backend");
#else
  MESSAGE("skipped: this build has no cuda backend");
#endif
}

}  // namespace test_cli_errors
