// examples/io/loader_pipeline.cpp (docs/io.md, README): runs it on a small dataset and checks
// what it prints — every record computed exactly once per epoch, and its metric lines.
// Timings are printed, not asserted (busy machines).

#include <doctest/doctest.h>

#include <string>

#include "support/run_command.hpp"

namespace test_loader_example {  // each test file's names apart (unity builds)

TEST_CASE("the loader example feeds every record once per epoch through its pipeline") {
#ifndef SWP_LOADER_EXAMPLE
  MESSAGE("examples not built: skipped");
#else
  const swp::test::CommandOutput run = swp::test::run_command(
      "timeout 120 '" SWP_LOADER_EXAMPLE "' --records 300 --bytes 1000 --epochs 2 --backend host");
  const std::string& out = run.out;
  CAPTURE(out);
  CHECK(run.status == 0);  // 1: some record was not computed exactly once
  CHECK(out.find("# 300 records of 1000 bytes") != std::string::npos);
  CHECK(out.find("10 batches per epoch, host\n") != std::string::npos);  // 32 records a batch
  CHECK(out.find("metric epochs 2 count\n") != std::string::npos);
  CHECK(out.find("metric every_record_once 1 bool\n") != std::string::npos);
  for (const char* name : {"records_per_s", "pipeline_mb_per_s", "us_per_iter",
                           "stall_us_per_batch", "peak_prefetched_batches"})
    CHECK(out.find(std::string("metric ") + name + " ") != std::string::npos);
  // Not a terminal: no progress display (it would write carriage returns).
  CHECK(out.find('\r') == std::string::npos);
#endif
}

TEST_CASE("the loader example refuses a bad flag with one error line naming it, and exits 1") {
#ifndef SWP_LOADER_EXAMPLE
  MESSAGE("examples not built: skipped");
#else
  struct Bad {
    const char* args;
    const char* named;  // what the error line must name
  };
  // Each was once ignored (the example ran with its defaults) or read as 0.
  for (const Bad bad : {Bad{"--recrods 300", "--recrods"}, Bad{"--records many", "--records"},
                        Bad{"--backend gpu", "--backend"}, Bad{"--epochs", "--epochs"}}) {
    CAPTURE(bad.args);
    // Standard error only: standard output must stay empty, nothing ran.
    const swp::test::CommandOutput run = swp::test::run_command(
        std::string("timeout 60 '" SWP_LOADER_EXAMPLE "' ") + bad.args + " 2>&1 >/dev/null");
    CHECK(run.status == 1);
    CHECK(run.out.starts_with("error: "));
    CHECK(run.out.find(bad.named) != std::string::npos);
    CHECK(run.out.find('\n') == run.out.size() - 1);  // exactly one line
  }
  const swp::test::CommandOutput help =
      swp::test::run_command("timeout 60 '" SWP_LOADER_EXAMPLE "' --help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--records") != std::string::npos);
#endif
}

}  // namespace test_loader_example
