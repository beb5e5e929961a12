// RecordWriter: an index longer than the writer keeps in memory goes through its spill file
// and comes out as if it never left (record_file.hpp reads it back).

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <span>
#include <system_error>
#include <vector>

#include "support/temp_dir.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/record_file.hpp"
#include "swp/io/record_writer.hpp"

namespace test_record_writer {  // each test file's names apart (unity builds)

namespace {

// Record i: its number, so a misplaced index entry reads back the wrong record.
std::uint64_t write_records(const std::filesystem::path& path, std::uint64_t count) {
  swp::io::RecordWriter out(path);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t word = i * 0x9e3779b97f4a7c15ULL;
    // Every third record one word longer: offsets that do not follow from the index number.
    const std::uint64_t words[2] = {word, ~word};
    REQUIRE(out.append(std::as_bytes(std::span(words, i % 3 == 0 ? 2 : 1))) == i);
  }
  CHECK(out.records() == count);
  out.close();
  return count;
}

}  // namespace

TEST_CASE("an index past the writer's in-memory block is written whole, in order, verified") {
  constexpr std::uint64_t block = swp::io::RecordWriter::index_block;
  for (const std::uint64_t count : {block - 1, block, block + 1, 3 * block + 5}) {
    CAPTURE(count);
    swp::test::TempDir dir;
    const auto path = dir / "a.swprec";
    write_records(path, count);
    const swp::io::RecordFile file(path);  // checks the index checksum and that frames tile
    REQUIRE(file.size() == count);
    std::uint64_t offset = swp::io::record_header_bytes;
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto length = i % 3 == 0 ? 16U : 8U;
      if (file.entry(i).offset != offset || file.entry(i).length != length) {
        CHECK(file.entry(i).offset == offset);  // reported once, not count times
        CHECK(file.entry(i).length == length);
        break;
      }
      offset += swp::io::frame_bytes(length);
    }
    for (const std::uint64_t i : {std::uint64_t{0}, block - 1, count - 1}) {
      if (i >= count) continue;
      const auto record = file.read(i);
      std::uint64_t first = 0;
      std::memcpy(&first, record.data(), sizeof first);
      CHECK(first == i * 0x9e3779b97f4a7c15ULL);
    }
    CHECK_NOTHROW(file.verify());
    // The spill file had no name: the directory holds the record file alone.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                        std::filesystem::directory_iterator()) == 1);
  }
}

TEST_CASE("a writer destroyed without close() completes its file and leaves no spill file") {
  swp::test::TempDir dir;
  const auto path = dir / "a.swprec";
  {
    swp::io::RecordWriter out(path);
    const std::uint64_t word = 7;
    for (std::uint64_t i = 0; i < swp::io::RecordWriter::index_block + 10; ++i)
      out.append(std::as_bytes(std::span(&word, 1)));
  }
  CHECK(swp::io::RecordFile(path).size() == swp::io::RecordWriter::index_block + 10);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("a writer destroyed while an exception unwinds leaves its file incomplete") {
  swp::test::TempDir dir;
  const auto path = dir / "a.swprec";
  struct ProducerFailed {};
  // Past the in-memory block too, so the spill file is dropped as well.
  for (const std::uint64_t records : {std::uint64_t{40}, swp::io::RecordWriter::index_block + 10}) {
    CAPTURE(records);
    try {
      swp::io::RecordWriter out(path);
      const std::uint64_t word = 7;
      for (std::uint64_t i = 0; i < records; ++i) out.append(std::as_bytes(std::span(&word, 1)));
      throw ProducerFailed{};
    } catch (const ProducerFailed&) {
    }
    CHECK_THROWS_WITH_AS(swp::io::RecordFile{path},
                         doctest::Contains("incomplete: the header has no index"),
                         swp::io::RecordError);
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                        std::filesystem::directory_iterator()) == 1);
  }
}

TEST_CASE("a writer made while an exception unwinds still closes on its own scope exit") {
  swp::test::TempDir dir;
  const auto path = dir / "a.swprec";
  struct WritesInDestructor {
    std::filesystem::path path;
    ~WritesInDestructor() {
      swp::io::RecordWriter out(path);
      const std::uint64_t word = 7;
      out.append(std::as_bytes(std::span(&word, 1)));
    }  // an ordinary exit for `out`, though an exception is in flight
  };
  try {
    WritesInDestructor writes{path};
    throw 1;
  } catch (int) {
  }
  CHECK(swp::io::RecordFile(path).size() == 1);
}

TEST_CASE("after a failed write close() refuses and the file is not finished") {
  if (!std::filesystem::exists("/dev/full")) return;  // no device that is always full here
  swp::io::RecordWriter out("/dev/full");
  // Larger than the stdio buffer, so fwrite itself meets the full device.
  const std::vector<std::byte> payload(1 << 20);
  CHECK_THROWS_AS(out.append(payload), std::system_error);
  CHECK_THROWS_WITH_AS(out.close(), doctest::Contains("after a failed write"), std::logic_error);
  CHECK_NOTHROW(out.close());  // closed, incomplete: idempotent
}

}  // namespace test_record_writer
