// Datasets: writing a test dataset, listing it, checking every checksum (the first bad file
// and offset named).

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/record_file.hpp"

namespace test_dataset {  // each test file's names apart (unity builds)

TEST_CASE("a generated dataset spreads its records over its files and checks clean") {
  swp::test::TempDir dir;
  std::uint64_t last_progress = 0;
  const auto files =
      swp::io::generate_dataset(dir.path(), {.records = 103, .bytes = 100, .files = 4, .seed = 9},
                                [&](std::uint64_t n) { last_progress = n; });
  CHECK(last_progress == 103);
  REQUIRE(files.size() == 4);
  CHECK(swp::io::list_dataset(dir.path()) == files);
  std::uint64_t g = 0;
  for (const auto& path : files) {
    const swp::io::RecordFile file(path);
    CHECK((file.size() == 26 || file.size() == 25));
    for (std::uint64_t i = 0; i < file.size(); ++i, ++g) {
      const auto payload = file.read(i);
      CHECK(payload.size() == 100);
      CHECK(swp::io::generated_record_id(payload) == g);
    }
  }
  CHECK(g == 103);
  const auto summary = swp::io::check_dataset(dir.path());
  CHECK(summary.files == 4);
  CHECK(summary.records == 103);
}

TEST_CASE("checking a dataset names the first bad file and the offset") {
  swp::test::TempDir dir;
  const auto files =
      swp::io::generate_dataset(dir.path(), {.records = 40, .bytes = 64, .files = 4, .seed = 1});
  const std::uint64_t at = swp::io::RecordFile(files[2]).entry(3).offset;
  swp::test::flip_byte(files[2], at + swp::io::frame_header_bytes + 5);
  swp::test::flip_byte(files[3], swp::io::RecordFile(files[3]).entry(1).offset + 20);
  try {
    (void)swp::io::check_dataset(dir.path());
    FAIL("no error");
  } catch (const swp::io::RecordError& e) {
    CHECK(e.file() == files[2]);
    CHECK(e.offset() == at);
  }
}

TEST_CASE("a generation interrupted by an exception names the file it leaves incomplete") {
  swp::test::TempDir dir;
  struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
  };
  const auto cancel_at_512 = [](std::uint64_t n) {
    if (n >= 512) throw Cancelled();
  };
  const auto part1 = dir / "part-00001.swprec";
  try {
    (void)swp::io::generate_dataset(dir.path(), {.records = 2000, .bytes = 64, .files = 2},
                                    cancel_at_512);
    FAIL("no error");
  } catch (const swp::io::RecordError& e) {
    CHECK(e.file() == dir / "part-00000.swprec");
    CHECK(std::string(e.what()).find("cancelled") != std::string::npos);
    CHECK_THROWS_AS(std::rethrow_if_nested(e), Cancelled);
  }
  CHECK_FALSE(std::filesystem::exists(part1));
  CHECK_THROWS_WITH_AS((void)swp::io::check_dataset(dir.path()),
                       doctest::Contains("incomplete: the header has no index"),
                       swp::io::RecordError);
}

TEST_CASE("generated file names sort in file order, however many files") {
  using swp::io::generated_file_name;
  CHECK(generated_file_name(0, 4) == "part-00000.swprec");
  CHECK(generated_file_name(99999, 100000) == "part-99999.swprec");
  // Past 100,000 files every name is wider, not only the ones past part-99999.
  CHECK(generated_file_name(0, 100001) == "part-000000.swprec");
  CHECK(generated_file_name(100000, 100001) == "part-100000.swprec");
  CHECK(generated_file_name(0, UINT64_MAX) == "part-00000000000000000000.swprec");
  for (const std::uint64_t files : {std::uint64_t{100001}, std::uint64_t{1234567}}) {
    CAPTURE(files);
    std::vector<std::string> names;
    for (const std::uint64_t f : {std::uint64_t{0}, std::uint64_t{9}, std::uint64_t{10001},
                                  std::uint64_t{99999}, std::uint64_t{100000}, files - 1})
      names.push_back(generated_file_name(f, files));
    CHECK(std::ranges::is_sorted(names));
  }
}

TEST_CASE("dataset errors name the directory or the argument") {
  swp::test::TempDir dir;
  CHECK_THROWS_WITH_AS((void)swp::io::list_dataset(dir / "missing"),
                       doctest::Contains("no such dataset directory"), swp::io::RecordError);
  CHECK_THROWS_WITH_AS((void)swp::io::list_dataset(dir.path()),
                       doctest::Contains("no record files"), swp::io::RecordError);
  CHECK_THROWS_WITH_AS(swp::io::generate_dataset(dir.path(), {.records = 0}),
                       doctest::Contains("--records"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::io::generate_dataset(dir.path(), {.records = 2, .bytes = 3}),
                       doctest::Contains("--bytes"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::io::generate_dataset(dir.path(), {.records = 2, .files = 3}),
                       doctest::Contains("--files"), std::invalid_argument);
}

}  // namespace test_dataset
