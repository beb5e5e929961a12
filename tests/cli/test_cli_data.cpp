// `swp data gen|check` as a separate process: a dataset written, checked, damaged and named;
// no progress display in a pipe; every file of the crafted corpus refused in one line.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "support/cli.hpp"
#include "support/crafted_records.hpp"
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

TEST_CASE("swp data check refuses every crafted file within 5 s in one error line naming it") {
  namespace crafted = swp::test::crafted;
  for (const crafted::Case& c : crafted::cases()) {
    INFO(c.name);
    swp::test::TempDir dir;
    const auto data = dir / "ds";
    std::filesystem::create_directory(data);
    const auto path = data / "x.swprec";
    c.make(path);
    // A deadline on the process: a hang (a FIFO opened blocking) fails as timeout's 124.
    const auto r = run_swp("data check " + quoted(data.string()), "timeout -k 2 5");
    CHECK_MESSAGE(r.status != 124, "swp data check did not finish within 5 s");
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(std::ranges::count(r.err, '\n') == 1);
    CHECK(r.err.ends_with("\n"));
    CHECK_MESSAGE(r.err.starts_with("error: " + path.string() + " at offset " +
                                    std::to_string(c.offset) + ": "),
                  r.err);
    CHECK_MESSAGE(r.err.find(c.why) != std::string::npos, r.err);
  }
}

TEST_CASE("swp data gen writes any number of records in flat memory, or refuses up front") {
  swp::test::TempDir dir;
  SUBCASE("two million records in one file within 32 MiB") {
    // The writer kept every index entry in a vector: 32 MiB for these, 48 MiB as it doubled.
    const auto out = dir / "ds";
    const auto gen = run_swp(
        "data gen --records 2000000 --bytes 8 --files 1 --out " + quoted(out.string()),
        swp::test::memory_cap_mib(32) + "ulimit -t 60;");
    CHECK(gen.status == 0);
    CHECK(gen.err.empty());
    const auto ok = run_swp("data check " + quoted(out.string()));
    CHECK(ok.status == 0);
    CHECK(ok.out.starts_with("ok: 1 files, 2000000 records, "));
    // Nothing but the dataset is left: the index spill file had no name.
    CHECK(std::distance(std::filesystem::directory_iterator(out),
                        std::filesystem::directory_iterator()) == 1);
  }
  SUBCASE("a dataset larger than its file system: one line naming the size, nothing written") {
    // It grew ~26 bytes a record until memory ran out.
    const auto out = dir / "huge";
    const auto r = run_swp("data gen --records 1000000000000 --bytes 8 --out " +
                               quoted(out.string()),
                           "ulimit -t 10;");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK_MESSAGE(r.err.starts_with("error: swp data gen: --records 1000000000000 of --bytes 8 "
                                    "take 44000000000256 bytes on disk (frames, index and "
                                    "headers); '" + out.string() + "' is on a file system with "),
                  r.err);
    CHECK(std::ranges::count(r.err, '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  SUBCASE("a record larger than the format's u32 length") {
    const auto r = run_swp("data gen --records 1 --bytes 4294967296 --out " +
                           quoted((dir / "big").string()));
    CHECK(r.status == 2);
    CHECK(r.err.find("--bytes: expected an integer in 8..4294967295") != std::string::npos);
  }
  SUBCASE("standard output that cannot be written") {
    if (!std::filesystem::exists("/dev/full")) return;
    const auto r = run_swp("data gen --records 4 --bytes 8 --out " +
                           quoted((dir / "full").string()) + " >/dev/full");
    CHECK(r.status == 1);
    CHECK(r.err == "error: writing standard output: No space left on device\n");
  }
}

}  // namespace test_cli_data
