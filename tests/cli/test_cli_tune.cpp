// `swp tune`: the best plan as JSON (stdout, or --out), metric lines, and errors.

#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/plans.hpp"

namespace test_cli_tune {  // each test file's names apart (unity builds)

using swp::test::quoted;
using swp::test::run_swp;
using swp::test::TempFile;

TEST_SUITE_BEGIN("cli tune");

namespace {

std::string swp_cli() { return quoted(SWP_CLI_PATH); }

// seed 000's SparseDist with recsys costs (or none), every task moved to stage 0.
std::string flat_sparse_dist_json(bool costs = true) {
  const auto r = run_swp(costs ? "preset sparse_dist --recsys-costs" : "preset sparse_dist");
  REQUIRE(r.status == 0);
  std::string json = r.out;
  for (const char* stage : {"\"stage\": 1", "\"stage\": 2"})
    for (std::size_t at; (at = json.find(stage)) != std::string::npos;)
      json.replace(at, std::string(stage).size(), "\"stage\": 0");
  json.replace(json.find("\"pipeline_depth\": 3"), 19, "\"pipeline_depth\": 1");
  return json;
}

constexpr const char* kQuick = " --iters 64 --search-iters 24";

}  // namespace

TEST_CASE("swp tune prints a plan that swp validate and swp run read back, metrics on stderr") {
  const auto r = run_swp(std::string("tune -") + kQuick,
                         swp_cli() + " preset fused_sparse_dist --recsys-costs |");
  CHECK(r.status == 0);
  CHECK(r.out.starts_with("{"));
  const auto m = swp::test::metric_values(r.err);
  for (const char* name : {"us_per_iter", "baseline_us_per_iter", "speedup", "candidates", "depth",
                           "baseline_depth", "max_depth", "exhaustive", "search_ms"})
    CHECK_MESSAGE(m.contains(name), name);
  CHECK(m.at("us_per_iter") <= m.at("baseline_us_per_iter"));
  CHECK(m.at("speedup") >= 1);
  CHECK(m.at("max_depth") == 3);
  CHECK(m.at("candidates") == 51);  // brute force over the stage rules

  const TempFile tuned(r.out);
  const auto v = run_swp("validate " + quoted(tuned.str()));
  CHECK(v.status == 0);
  CHECK(v.err.empty());  // no unknown-key warnings
  const auto run =
      run_swp("run " + quoted(tuned.str()) + " --engine clock --backend sim --iters 64");
  CHECK(run.status == 0);
  CHECK(swp::test::metric_values(run.out).at("us_per_iter") == doctest::Approx(m.at("us_per_iter")));
}

TEST_CASE("swp tune --out writes the plan to the file and the metric lines to stdout") {
  const TempFile plan(flat_sparse_dist_json());
  const TempFile out("", ".json");
  const auto r =
      run_swp("tune " + quoted(plan.str()) + " --max-depth 3 --out " + quoted(out.str()) + kQuick);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  const auto m = swp::test::metric_values(r.out);
  CHECK(m.at("us_per_iter") < m.at("baseline_us_per_iter"));  // the poor plan gets faster
  CHECK(m.at("speedup") > 1.2);
  CHECK(m.at("depth") <= 3);
  CHECK(m.at("baseline_depth") == 1);
  const auto v = run_swp("validate " + quoted(out.str()));
  CHECK(v.status == 0);
  CHECK(v.out.starts_with("ok: 8 tasks, depth "));
}

TEST_CASE("swp tune --costs simulates what swp profile measured") {
  const TempFile costed(flat_sparse_dist_json());
  const auto profile = run_swp("profile " + quoted(costed.str()) + " --measure 2 --rounds 1");
  REQUIRE_MESSAGE(profile.status == 0, profile.err);
  const TempFile costs(profile.out);
  // The same plan without costs, as a user with real task bodies has it.
  const TempFile plan(flat_sparse_dist_json(false));

  const auto blind = run_swp("tune " + quoted(plan.str()) + " --max-depth 3" + kQuick);
  REQUIRE_MESSAGE(blind.status == 0, blind.err);
  CHECK(swp::test::metric_values(blind.err).at("speedup") == 0);  // 0 us either way: nothing to go by

  const auto informed = run_swp("tune " + quoted(plan.str()) + " --max-depth 3 --costs " +
                                quoted(costs.str()) + kQuick);
  REQUIRE_MESSAGE(informed.status == 0, informed.err);
  const auto m = swp::test::metric_values(informed.err);
  CHECK(m.at("speedup") > 1.2);
  CHECK(m.at("depth") >= 2);
  CHECK(informed.out.find("_us") == std::string::npos);  // the plan keeps its own (no) costs

  const auto piped =
      run_swp("tune " + quoted(plan.str()) + " --max-depth 3 --costs -" + kQuick,
              swp_cli() + " profile " + quoted(costed.str()) + " --measure 2 --rounds 1 |");
  CHECK(piped.status == 0);
  CHECK(piped.out == informed.out);
}

TEST_CASE("swp tune --costs errors name the file, the line or the task (exit 2)") {
  const TempFile plan(flat_sparse_dist_json());
  const auto tune = [&](const std::string& flags, const std::string& pipe = "") {
    return run_swp("tune " + quoted(plan.str()) + " " + flags + kQuick, pipe);
  };
  SUBCASE("a file that cannot be read") {
    const auto r = tune("--costs /nonexistent-swp/prof.txt");
    CHECK(r.status == 2);
    CHECK(r.err.starts_with("error: cannot read --costs '/nonexistent-swp/prof.txt'"));
  }
  SUBCASE("a malformed metric line, by line number") {
    const TempFile costs(
        "Baseline\nmetric exposed_us.H2D 300 us\nmetric exposed_us.Forward lots us\n");
    const auto r = tune("--costs " + quoted(costs.str()));
    CHECK(r.status == 2);
    CHECK(r.err.find(costs.str() + ":3: expected 'metric exposed_us.TASK") != std::string::npos);
  }
  SUBCASE("no exposed times at all") {
    const TempFile costs("metric us_per_iter 10 us\n");
    const auto r = tune("--costs " + quoted(costs.str()));
    CHECK(r.status == 2);
    CHECK(r.err.find("no 'metric exposed_us.TASK' lines") != std::string::npos);
  }
  SUBCASE("a task the plan does not have") {
    const TempFile costs("metric exposed_us.H2D 300 us\nmetric exposed_us.Loader 40 us\n");
    const auto r = tune("--costs " + quoted(costs.str()));
    CHECK(r.status == 2);
    CHECK(r.err.find("'Loader'") != std::string::npos);
    CHECK(r.out.empty());
  }
  SUBCASE("a time that scales a task's cost past the limit") {
    const TempFile costs("metric exposed_us.H2D 2000000000 us\n");
    const auto r = tune("--costs " + quoted(costs.str()));
    CHECK(r.status == 2);
    CHECK(r.err.starts_with("error: --costs '" + costs.str() +
                            "': profiled task 'H2D': an exposed time of 2e+09 us"));
    CHECK(r.out.empty());
  }
  SUBCASE("plan and costs both on stdin; --costless-on without --costs") {
    const auto both = run_swp("tune - --costs -", swp_cli() + " preset base |");
    CHECK(both.status == 2);
    CHECK(both.err.find("standard input") != std::string::npos);
    const auto alone = tune("--costless-on cpu");
    CHECK(alone.status == 2);
    CHECK(alone.err.find("--costs") != std::string::npos);
  }
}

TEST_CASE("swp tune --costs reads no more than a profile can be, naming the file and bound") {
  const TempFile plan(flat_sparse_dist_json());
  SUBCASE("one endless line: /dev/zero") {
    // It was read whole: 16.8 GB and 80 s, then the machine's memory ran out.
    const auto r = run_swp("tune " + quoted(plan.str()) + " --costs /dev/zero" + kQuick,
                           swp::test::memory_cap_mib(200) + "ulimit -t 60;");
    CHECK(r.status == 2);
    CHECK(r.err ==
          "error: --costs /dev/zero:1: a line longer than 1 MiB: not a line of `swp profile` "
          "output\n");
    CHECK(r.out.empty());
  }
  SUBCASE("more exposed times than the plan has tasks") {
    std::string lines;
    for (int i = 0; i < 9; ++i) lines += "metric exposed_us.T" + std::to_string(i) + " 1 us\n";
    const TempFile costs(lines, ".txt");
    const auto r = run_swp("tune " + quoted(plan.str()) + " --costs " + quoted(costs.str()) + kQuick);
    CHECK(r.status == 2);
    CHECK(r.err == "error: --costs " + costs.str() +
                       ":9: more exposed_us lines than the plan's 8 tasks (a profile measures "
                       "each task once)\n");
  }
}

TEST_CASE("swp tune errors: invalid plans exit 1 naming tasks, bad flags and paths exit 2") {
  SUBCASE("a plan breaking corollary 1") {
    const TempFile plan(R"({"tasks": [{"name": "A", "stage": 1}, {"name": "B", "stage": 0}],
                           "intra_iter_deps": [["B", "A"]]})");
    const auto r = run_swp("tune " + quoted(plan.str()));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("error: ") != std::string::npos);
    CHECK(r.err.find("corollary 1") != std::string::npos);
  }
  SUBCASE("a depth cap below 1") {
    const auto r = run_swp("tune - --max-depth 0", swp_cli() + " preset base |");
    CHECK(r.status == 2);
    CHECK(r.err.find("--max-depth") != std::string::npos);
  }
  SUBCASE("a depth cap above 64") {
    const auto r = run_swp("tune - --max-depth 65", swp_cli() + " preset base |");
    CHECK(r.status == 2);
    CHECK(r.err.find("--max-depth") != std::string::npos);
  }
  SUBCASE("a plan deeper than 64 is tuned under 64, with a warning saying so") {
    const TempFile plan(R"({"tasks": [{"name": "A", "stage": 0, "cpu_us": 1},
                                      {"name": "B", "stage": 69, "cpu_us": 1}]})");
    const auto r = run_swp("tune " + quoted(plan.str()) +
                           " --max-candidates 20 --iters 20 --search-iters 10");
    CHECK(r.status == 0);
    CHECK(r.err.find("warning: ") != std::string::npos);
    CHECK(r.err.find("above the tuner's limit of 64") != std::string::npos);
    CHECK(swp::test::metric_values(r.err).at("max_depth") == 64);
  }
  SUBCASE("a plan deeper than 64 that no plan under 64 beats is printed unchanged, saying so") {
    // A chain of 70 tasks on lanes of their own, a stage each: under 64 stages two tasks
    // share a period, so every candidate is slower than the input.
    std::string json = R"({"tasks": [)", deps;
    for (int i = 0; i < 70; ++i) {
      const std::string name = "T" + std::to_string(i);
      json += (i > 0 ? ", " : "") + std::string(R"({"name": ")") + name + R"(", "stage": )" +
              std::to_string(i) + R"(, "thread_group": "g)" + std::to_string(i) +
              R"(", "cpu_us": 10})";
      if (i > 0)
        deps += (i > 1 ? ", " : "") + std::string(R"([")") + name + R"(", "T)" +
                std::to_string(i - 1) + R"("])";
    }
    const TempFile plan(json + R"(], "intra_iter_deps": [)" + deps + "]}");
    const auto r =
        run_swp("tune " + quoted(plan.str()) + " --max-candidates 20 --iters 20 --search-iters 10");
    CHECK(r.status == 0);
    const auto m = swp::test::metric_values(r.err);
    CHECK(m.at("us_per_iter") == m.at("baseline_us_per_iter"));
    CHECK(m.at("speedup") == 1);
    CHECK(m.at("depth") == 70);
    CHECK(r.err.find("warning: " + plan.str() +
                     ": no plan under the tuner's limit of 64 is "
                     "faster than the input (depth 70): printing the input unchanged") !=
          std::string::npos);
    const TempFile tuned(r.out);
    const auto v = run_swp("validate " + quoted(tuned.str()));
    CHECK(v.out.starts_with("ok: 70 tasks, depth 70"));
  }
  SUBCASE("an --out path that cannot be written, before searching") {
    const std::string missing = "/nonexistent-swp-dir/tuned.json";
    const auto r = run_swp("tune - --out " + quoted(missing), swp_cli() + " preset base |");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.starts_with("error: cannot write '" + missing));
  }
}

TEST_SUITE_END();

}  // namespace test_cli_tune
