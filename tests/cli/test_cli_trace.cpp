// `swp run --trace F.json --svg F.svg`: the timeline files of a run.

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>

#include "support/cli.hpp"
#include "support/plans.hpp"
#include "support/xml_dom.hpp"

namespace test_cli_trace {  // each test file's names apart (unity builds)

TEST_SUITE_BEGIN("trace");

using swp::test::quoted;
using swp::test::run_swp;
using swp::test::TempFile;

namespace {

std::string three_stage() {
  return quoted((swp::test::data_dir() / "plans" / "three_stage.json").string());
}

}  // namespace

TEST_CASE("swp run --trace and --svg write a Chrome trace and an SVG timeline of the run") {
  const TempFile json_file("", ".json");
  const TempFile svg_file("", ".svg");
  const auto r = run_swp("run " + three_stage() + " --backend sim --iters 5 --trace " +
                         quoted(json_file.str()) + " --svg " + quoted(svg_file.str()));
  REQUIRE(r.status == 0);
  CHECK(r.out.find("metric us_per_iter") != std::string::npos);

  const auto doc = boost::json::parse(swp::test::read_text(json_file.path()));
  std::size_t complete = 0, threads = 0;
  for (const auto& e : doc.at("traceEvents").as_array()) {
    const auto& ph = e.at("ph").as_string();
    complete += ph == "X";
    threads += ph == "M" && e.at("name").as_string() == "thread_name";
  }
  CHECK(threads == 6);                // streams s0..s2, lanes l0..l2
  CHECK(complete == 3 * 5 * 2);       // a lane slice and a device slice per instance

  const auto svg = swp::test::XmlReader::parse(swp::test::read_text(svg_file.path()));
  CHECK(svg.find_all("g", "track").size() == 6);
  CHECK(svg.find_all("rect", "slice").size() == 3 * 5 * 2);
}

TEST_CASE("swp run with an unwritable --trace or --svg path exits 2 naming it, before running") {
  const std::string missing = "/nonexistent-swp-dir/timeline";
  for (const char* flag : {"--trace", "--svg"}) {
    CAPTURE(flag);
    const auto r = run_swp("run " + three_stage() + " --backend sim --iters 5 " + flag + " " +
                           quoted(missing + (flag[2] == 't' ? ".json" : ".svg")));
    CHECK(r.status == 2);
    CHECK(r.out.empty());  // nothing ran
    CHECK(r.err.starts_with("error: cannot write '" + missing));
  }
}

TEST_CASE("--trace and --svg naming one file exit 2 before running, and leave it as it was") {
  // The SVG used to overwrite the trace silently (exit 0, the file holding only the SVG).
  const TempFile file("keep me", ".out");
  const std::string dotted =
      (file.path().parent_path() / "." / file.path().filename()).string();  // another spelling
  for (const std::string& svg : {file.str(), dotted}) {
    CAPTURE(svg);
    for (const std::string& command :
         {"run " + three_stage() + " --backend sim --iters 5",
          std::string("pp simulate --schedule gpipe --stages 2 --microbatches 2 --fwd-us 1 "
                      "--bwd-us 1")}) {
      CAPTURE(command);
      const auto r = run_swp(command + " --trace " + quoted(file.str()) + " --svg " + quoted(svg));
      CHECK(r.status == 2);
      CHECK(r.out.empty());
      CHECK(r.err == "error: --trace and --svg name the same file '" + svg +
                         "': the SVG would overwrite the trace; give them different paths\n");
      CHECK(swp::test::read_text(file.path()) == "keep me");
    }
  }
}

TEST_SUITE_END();

}  // namespace test_cli_trace
