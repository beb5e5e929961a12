#include "swp/tune/profile_result.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>

namespace test_profile_result {  // each test file's names apart (unity builds)

TEST_CASE("ProfileResult prints the seed's report and sums exposed times") {
  swp::ProfileResult r;
  r.baseline_s = 8.503e-3;
  r.tasks = {{"CopyBatch", 0.521e-3, 7.982e-3}, {"EmbLookup", 1.234e-3, 7.269e-3}};
  CHECK(r.sum_s() == doctest::Approx(1.755e-3));
  CHECK(r.exposed_s("EmbLookup") == doctest::Approx(1.234e-3));
  CHECK_THROWS_WITH_AS((void)r.exposed_s("Nope"), doctest::Contains("'Nope'"), std::out_of_range);
  const std::string expected =
      "Baseline serial iteration: 8.503 ms\n"
      "\n"
      "Task                        Exposed   % baseline\n"
      "------------------------ ---------- ------------\n"
      "CopyBatch                   0.521ms         6.1%\n"
      "EmbLookup                   1.234ms        14.5%\n"
      "------------------------ ---------- ------------\n"
      "SUM                         1.755ms        20.6%\n";
  CHECK(r.format_report() == expected);
  std::ostringstream out;
  r.print_report(out);
  CHECK(out.str() == expected);
}

TEST_CASE("ProfileResult widens the task column for long names") {
  swp::ProfileResult r;
  r.baseline_s = 1e-3;
  r.tasks = {{"AVeryLongTaskNameThatIsLong", 0.5e-3, 0.5e-3}};
  const std::string report = r.format_report();
  CHECK(report.find("AVeryLongTaskNameThatIsLong    0.500ms        50.0%") != std::string::npos);
  // Appended, not `std::string + "literal"`: g++ 12 warns falsely on that (GCC PR 105329).
  std::string rule(27, '-');
  rule.append(" ---------- ------------");
  CHECK(report.find(rule) != std::string::npos);
}

}  // namespace test_profile_result
