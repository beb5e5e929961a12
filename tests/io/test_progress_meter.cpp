// ProgressMeter: silent off a terminal, a redrawn line with rates and ETA on one.

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "swp/io/progress_meter.hpp"

namespace test_progress_meter {  // each test file's names apart (unity builds)

TEST_CASE("the progress line gives records, rates and the time left") {
  const swp::io::ProgressMeter meter("load", 1000, 2'000'000, nullptr, false);
  CHECK(meter.line(250, 500'000, std::chrono::seconds(2)) ==
        "load: 250/1000 records  125 records/s  0.2 MB/s  ETA 6s");
}

TEST_CASE("a progress meter draws nothing off a terminal and redraws one line when forced") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  swp::io::ProgressMeter silent("load", 10, 100, file);  // a file is no terminal
  CHECK_FALSE(silent.enabled());
  silent.update(5, 50);
  silent.finish();
  CHECK(std::ftell(file) == 0);
  swp::io::ProgressMeter forced("load", 10, 100, file, true);
  forced.update(5, 50);
  forced.finish();
  std::rewind(file);
  char text[256] = {};
  const std::size_t n = std::fread(text, 1, sizeof text - 1, file);
  const std::string out(text, n);
  CHECK(out.starts_with("\rload: 5/10 records"));
  CHECK(out.ends_with("\r\033[K"));
  std::fclose(file);
}

}  // namespace test_progress_meter
