// examples/lazy/overarch_sdd.cpp (docs/lazy.md): runs it briefly and checks what it prints —
// both executed orders and its metric lines. Timings are printed, not asserted (busy machines).

#include <doctest/doctest.h>

#include <string>

#include "support/run_command.hpp"

namespace test_overarch_sdd {  // each test file's names apart (unity builds)

TEST_CASE(
    "the OverArch/SDD example runs sdd_fwd right before func2's backward only with the hook") {
#ifndef SWP_LAZY_EXAMPLE
  MESSAGE("examples not built: skipped");
#else
  const swp::test::CommandOutput run = swp::test::run_command("timeout 60 '" SWP_LAZY_EXAMPLE "' --steps 2");
  const std::string& out = run.out;
  CHECK(run.status == 0);  // 1 would mean the reordered program computed other values
  CHECK(out.find("order without reordering: overarch_func1 sdd_fwd overarch_func2 "
                 "overarch_func2_bwd overarch_func1_bwd\n") != std::string::npos);
  CHECK(out.find("order with the pre-hook:  overarch_func1 overarch_func2 sdd_fwd "
                 "overarch_func2_bwd overarch_func1_bwd\n") != std::string::npos);
  CHECK(out.find("metric lazy_example_ms_per_step_in_order ") != std::string::npos);
  CHECK(out.find("metric lazy_example_ms_per_step_reordered ") != std::string::npos);
  CHECK(out.find("metric lazy_example_overlap_gain ") != std::string::npos);
#endif
}

TEST_CASE("the OverArch/SDD example refuses a bad flag with one error line naming it, and exits 2") {
#ifndef SWP_LAZY_EXAMPLE
  MESSAGE("examples not built: skipped");
#else
  for (const char* args : {"--steps 0", "--steps 2x", "--stesp 2", "--steps"}) {
    CAPTURE(args);
    const swp::test::CommandOutput run = swp::test::run_command(
        std::string("timeout 60 '" SWP_LAZY_EXAMPLE "' ") + args + " 2>&1 >/dev/null");
    CHECK(run.status == 2);
    CHECK(run.out.starts_with("error: "));
    CHECK(run.out.find(std::string(args).substr(0, 7)) != std::string::npos);  // the flag
    CHECK(run.out.find('\n') == run.out.size() - 1);  // exactly one line
  }
#endif
}

}  // namespace test_overarch_sdd
