// `swp data gen|check` as a separate process: a dataset written, checked, damaged and named;
// no progress display in a pipe.

#include <doctest/doctest.h>

#include <string>

#include "support/cli.hpp"
#include "support/temp_dir.hpp"
#include "swp/io/record_file.hpp"

namespace test_cli_data {  // each test file's names apart (unity builds)

using swp::test::quoted;
using swp::test::run_swp;

TEST_CASE("swp data gen writes a dataset that swp data check verifies") {
  swp::test::TempDir dir;
  const auto out = dir / "ds";
  const auto gen = run_swp("data gen --records 50 --bytes 300 --out " + quoted(out.string()));
  CHECK(gen.status == 0);
  CHECK(gen.err.empty());
  CHECK(gen.out == "wrote 50 records of 300 bytes in 4 files to " + out.string() + "\n");
  const auto ok = run_swp("data check " + quoted(out.string()));
  CHECK(ok.status == 0);
  CHECK(ok.out.starts_with("ok: 4 files, 50 records, "));
  CHECK(ok.out.find('\r') == std::string::npos);  // stdout is a pipe: no progress line
  CHECK(ok.err.empty());
}

TEST_CASE("swp data check names the first bad file and offset in one error line") {
  swp::test::TempDir dir;
  const auto out = dir / "ds";
  REQUIRE(
      run_swp("data gen --records 20 --bytes 64 --files 2 --out " + quoted(out.string())).status ==
      0);
  const auto file = out / "part-00001.swprec";
  const std::uint64_t at = swp::io::RecordFile(file).entry(4).offset;
  swp::test::flip_byte(file, at + swp::io::frame_header_bytes + 9);
  const auto bad = run_swp("data check " + quoted(out.string()));
  CHECK(bad.status == 1);
  CHECK(bad.out.empty());
  CHECK(bad.err == "error: " + file.string() + " at offset " + std::to_string(at) +
                       ": checksum mismatch in the record of 64 bytes" +
                       bad.err.substr(bad.err.find(" (stored")));
  const auto missing = run_swp("data check " + quoted((dir / "nope").string()));
  CHECK(missing.status == 1);
  CHECK(missing.err.find("no such dataset directory") != std::string::npos);
}

TEST_CASE("swp data gen refuses bad sizes naming the flag") {
  swp::test::TempDir dir;
  const auto r =
      run_swp("data gen --records 3 --bytes 64 --files 5 --out " + quoted((dir / "x").string()));
  CHECK(r.status == 2);
  CHECK(r.err.starts_with("error: swp data gen: --files (5) must not exceed --records (3)"));
  const auto small = run_swp("data gen --records 3 --bytes 2 --out " + quoted(dir.path().string()));
  CHECK(small.status == 2);
  CHECK(small.err.find("--bytes") != std::string::npos);
}

}  // namespace test_cli_data
