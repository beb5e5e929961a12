// `swp preset`: the catalogue, plan JSON that the plan commands read back, option flags,
// usage errors, docs/presets.md's tables kept equal to what the tool prints, and its timelines.

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/cli.hpp"
#include "support/plans.hpp"
#include "support/text.hpp"
#include "support/xml_dom.hpp"
#include "swp/presets/preset_registry.hpp"

namespace test_cli_preset {  // each test file's names apart (unity builds)

using swp::test::contains;
using swp::test::quoted;
using swp::test::Result;
using swp::test::run_swp;

TEST_SUITE_BEGIN("cli preset");

namespace {

// `swp <producer> | swp <consumer>`: the consumer reads the producer's output on stdin.
Result piped(const std::string& producer, const std::string& consumer) {
  return run_swp(consumer, quoted(SWP_CLI_PATH) + " " + producer + " |");
}

}  // namespace

TEST_CASE("swp preset --list names the 11 presets with a description each") {
  const auto r = run_swp("preset --list");
  CHECK(r.status == 0);
  std::istringstream in(r.out);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) CHECK(line.find(' ') > 2);
  CHECK(lines == 11);
  CHECK(contains(r.out, "sparse_dist_comp_autograd "));
  CHECK(contains(r.out, "staged "));
}

TEST_CASE("swp preset NAME | swp schedule - reproduces seed 000's tables") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const int periods = name == "semi_sync" ? 6 : 5;
    const auto r = piped("preset " + name, "schedule - --periods " + std::to_string(periods));
    CHECK(r.status == 0);
    CHECK(r.out == swp::test::read_text(swp::test::seed_table_path(name)));
  }
}

TEST_CASE("every preset's JSON passes swp validate and runs with recsys costs") {
  for (const char* name : {"base", "pt2", "sparse_dist", "sparse_dist_lite", "fused_sparse_dist",
                           "semi_sync", "prefetch_sparse_dist", "eval_sparse_dist",
                           "eval_fused_sparse_dist", "staged", "sparse_dist_comp_autograd"}) {
    CAPTURE(name);
    const auto v = piped(std::string("preset ") + name, "validate -");
    CHECK(v.status == 0);
    CHECK(v.out.starts_with("ok: "));
  }
  const auto run = piped("preset sparse_dist --recsys-costs", "run - --backend sim --iters 50");
  CHECK(run.status == 0);
  CHECK(contains(run.out, "metric us_per_iter 2270 us"));
}

TEST_CASE("swp preset options change the plan") {
  const std::string emb = R"("name": "EmbLookup", "stage": 2, "stream": "emb_lookup")";
  const auto fused = run_swp("preset fused_sparse_dist");
  CHECK(contains(fused.out, emb));
  CHECK(contains(fused.out, R"("stream_aliases": {"emb_lookup": "data_dist"})"));
  const auto current = run_swp("preset fused_sparse_dist --emb-lookup-stream current");
  CHECK(contains(current.out, emb));
  CHECK(contains(current.out, R"("stream_aliases": {"emb_lookup": "default"})"));
  const auto fresh = run_swp("preset fused_sparse_dist --emb-lookup-stream new");
  CHECK(contains(fresh.out, emb));
  CHECK_FALSE(contains(fresh.out, "stream_aliases"));
  CHECK(contains(run_swp("preset eval_sparse_dist --loader-lane io").out, R"("thread_group": "io")"));
  const auto staged = run_swp("preset staged --stages copy:memcpy,post");
  CHECK(contains(staged.out, R"("name": "copy", "stage": 0, "stream": "memcpy")"));
  CHECK(contains(staged.out, R"("name": "post", "stage": 1, "stream": "post")"));
  const auto sync = run_swp("preset semi_sync --phase sync");
  CHECK(sync.status == 0);
  CHECK(contains(sync.out, R"(["EmbLookup", "OptimizerStep"])"));
  CHECK_FALSE(contains(run_swp("preset semi_sync").out, R"(["EmbLookup", "OptimizerStep"])"));
}

TEST_CASE("swp preset usage errors name the thing and exit 2") {
  auto check_usage = [](const std::string& args, const std::string& message) {
    CAPTURE(args);
    const auto r = run_swp(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, message));
  };
  check_usage("preset sparse_dsit", "unknown preset 'sparse_dsit'");
  check_usage("preset", "name a preset");
  check_usage("preset fused_sparse_dist --emb-lookup-stream fresh", "emb-lookup-stream");
  check_usage("preset base --phase sync", "preset 'base' has no phase 'sync'; its phases are steady");
  check_usage("preset staged --stages a,,:x", "stage 1 has no name");
  // Names that are no UTF-8 made JSON that swp itself could not read back.
  check_usage(R"x(preset eval_sparse_dist --loader-lane "$(printf 'l\351')")x",
              "thread group 'l\\xe9'");
  check_usage(R"x(preset staged --stages "$(printf 'caf\351:s')")x", "name 'caf\\xe9'");
}

TEST_CASE("swp preset --stages refuses empty lists, items and streams instead of guessing") {
  auto check_usage = [](const std::string& args, const std::string& message) {
    CAPTURE(args);
    const auto r = run_swp(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "--stages"));
    CHECK(contains(r.err, message));
  };
  // '' and ',' printed the default plan, 'a:' put stage a on stream 'a', 'a,,b' dropped the
  // empty item, 'a,b,' the trailing one.
  check_usage("preset staged --stages ''", "no stages");
  check_usage("preset staged --stages ,", "stage 0 has no name");
  check_usage("preset staged --stages a,,b", "stage 1 has no name");
  check_usage("preset staged --stages a,b,", "stage 2 has no name");
  check_usage("preset staged --stages a:", "stage 'a' has an empty stream");
  const auto ok = run_swp("preset staged --stages a:s,b");
  CHECK(ok.status == 0);
  CHECK(contains(ok.out, R"("name": "a", "stage": 0, "stream": "s")"));
  CHECK(contains(ok.out, R"("name": "b", "stage": 1, "stream": "b")"));
}

TEST_CASE("swp preset refuses an option that does not apply to the preset, naming both") {
  // `base --stages x` was accepted and the option ignored.
  // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
  for (const auto& [args_, option] : std::vector<std::pair<std::string, std::string>>{
           {"preset base --stages x", "--stages"},
           {"preset sparse_dist --loader-lane io", "--loader-lane"},
           {"preset staged --start-batch 3", "--start-batch"},
           {"preset semi_sync --compile-on-iter 2", "--compile-on-iter"},
           {"preset pt2 --emb-lookup-stream new", "--emb-lookup-stream"}}) {
    const std::string& args = args_;
    CAPTURE(args);
    const auto r = run_swp(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, option));
    CHECK(contains(r.err, "preset '" + args.substr(7, args.find(' ', 7) - 7) + "'"));
  }
  // What applies still does, and --phase and --recsys-costs apply to every preset.
  CHECK(run_swp("preset eval_fused_sparse_dist --emb-lookup-stream new --recsys-costs").status ==
        0);
  CHECK(run_swp("preset semi_sync --start-batch 3 --phase sync").status == 0);
}

// docs/presets.md shows each preset's table under the command that prints it
// ("$ swp preset ARGS | swp schedule - --periods N"); they must stay what the tool prints.
TEST_CASE("the schedule tables in docs/presets.md are the tool's output") {
  const auto doc = swp::test::read_text(swp::test::data_dir() / ".." / ".." / "docs" / "presets.md");
  const std::string prompt = "$ swp preset ";
  int checked = 0;
  for (auto at = doc.find(prompt); at != std::string::npos; at = doc.find(prompt, at + 1)) {
    const auto eol = doc.find('\n', at);
    const std::string command = doc.substr(at + prompt.size(), eol - at - prompt.size());
    const auto bar = command.find(" | swp schedule ");
    if (bar == std::string::npos) continue;
    const auto fence = doc.find("```", eol);
    REQUIRE(fence != std::string::npos);
    CAPTURE(command);
    const auto r = piped("preset " + command.substr(0, bar), command.substr(bar + 7));
    CHECK(r.status == 0);
    CHECK(r.out == doc.substr(eol + 1, fence - eol - 1));
    ++checked;
  }
  CHECK(checked >= 12);
}

// docs/presets.md shows under each table the timeline of a run of that preset, made by
// tools/make-preset-timelines.sh; each must be there, well-formed, and a picture of the
// preset's steady plan as it is now: a slice for each of its tasks and no other task.
TEST_CASE("the timelines in docs/presets.md are SVGs of each preset's tasks") {
  const auto docs = swp::test::data_dir() / ".." / ".." / "docs";
  const auto doc = swp::test::read_text(docs / "presets.md");
  for (const auto& info : swp::presets::preset_catalogue()) {
    const std::string name(info.name);
    CAPTURE(name);
    const std::string picture = "img/presets/" + name + ".svg";
    CHECK(contains(doc, "![" + name + " timeline](" + picture + ")"));
    const auto svg = swp::test::XmlReader::parse(swp::test::read_text(docs / picture));
    std::set<std::string> drawn;
    for (const auto* slice : svg.find_all("rect", "slice")) drawn.insert(slice->attr("data-task"));
    const auto preset = swp::presets::make_preset(name);
    std::set<std::string> tasks;
    for (const auto& t : preset.plan().tasks) tasks.insert(t.task.name);
    CHECK(drawn == tasks);
  }
}

TEST_SUITE_END();

}  // namespace test_cli_preset
