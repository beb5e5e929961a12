// Record files: the format round trip (writer -> reader), and every kind of damage reported
// with the file and the offset.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "support/crafted_records.hpp"
#include "support/temp_dir.hpp"
#include "swp/io/record_file.hpp"
#include "swp/io/record_format.hpp"
#include "swp/io/record_writer.hpp"

namespace test_record_file {  // each test file's names apart (unity builds)

namespace {

using swp::io::RecordError;
using swp::io::RecordFile;

std::vector<std::byte> payload(std::size_t size, int salt) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 31 + salt) & 0xff);
  return bytes;
}

const std::vector<std::size_t> sizes{0, 1, 7, 8, 9, 1000, 4096, 65537};

std::filesystem::path write_file(const swp::test::TempDir& dir) {
  const auto path = dir / "a.swprec";
  swp::io::RecordWriter out(path);
  for (std::size_t i = 0; i < sizes.size(); ++i) CHECK(out.append(payload(sizes[i], int(i))) == i);
  out.close();
  return path;
}

// The error `f` throws, as RecordError (fails the test when it throws none).
template <class F>
RecordError record_error(F&& f) {
  try {
    f();
  } catch (const RecordError& e) {
    return e;
  }
  FAIL("no RecordError");
  return RecordError({}, 0, "");
}

}  // namespace

TEST_CASE("records written are read back byte for byte, in order, with their index") {
  swp::test::TempDir dir;
  const auto path = write_file(dir);
  const RecordFile file(path);
  REQUIRE(file.size() == sizes.size());
  std::uint64_t expected_offset = swp::io::record_header_bytes;
  std::uint64_t data = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(file.entry(i).offset == expected_offset);
    CHECK(file.entry(i).length == sizes[i]);
    CHECK(file.read(i) == payload(sizes[i], int(i)));
    expected_offset += swp::io::frame_bytes(sizes[i]);
    data += sizes[i];
  }
  CHECK(file.data_bytes() == data);
  CHECK(file.file_bytes() == expected_offset + sizes.size() * swp::io::index_entry_bytes);
  CHECK_NOTHROW(file.verify());
  CHECK_THROWS_AS((void)file.read(sizes.size()), std::out_of_range);
}

TEST_CASE("an empty record file is valid and a writer refuses appends after close") {
  swp::test::TempDir dir;
  swp::io::RecordWriter out(dir / "empty.swprec");
  out.close();
  CHECK_THROWS_AS(out.append(payload(3, 0)), std::logic_error);
  const RecordFile file(dir / "empty.swprec");
  CHECK(file.size() == 0);
  CHECK_NOTHROW(file.verify());
}

TEST_CASE("a corrupt byte in a record is reported with the file and the record's offset") {
  swp::test::TempDir dir;
  const auto path = write_file(dir);
  const std::uint64_t record5 = RecordFile(path).entry(5).offset;
  swp::test::flip_byte(path, record5 + swp::io::frame_header_bytes + 123);
  const RecordFile file(path);  // header and index are intact
  CHECK(file.read(4) == payload(sizes[4], 4));
  const RecordError e = record_error([&] { file.verify(); });
  CHECK(e.file() == path);
  CHECK(e.offset() == record5);
  CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
  CHECK(std::string(e.what()).find("offset " + std::to_string(record5)) != std::string::npos);
  CHECK(std::string(e.what()).find("checksum mismatch") != std::string::npos);
  CHECK(record_error([&] { (void)file.read(5); }).offset() == record5);
}

TEST_CASE("a corrupt frame length, header or index is reported where it is") {
  swp::test::TempDir dir;
  const auto path = write_file(dir);
  std::uint64_t record2 = 0, index = 0;
  {
    const RecordFile file(path);
    record2 = file.entry(2).offset;
    index = file.entry(sizes.size() - 1).offset + swp::io::frame_bytes(sizes.back());
  }
  SUBCASE("frame length") {
    swp::test::flip_byte(path, record2);
    const RecordError e = record_error([&] { RecordFile(path).verify(); });
    CHECK(e.offset() == record2);
    CHECK(std::string(e.what()).find("corrupt record header") != std::string::npos);
  }
  SUBCASE("header") {
    swp::test::flip_byte(path, 20);
    const RecordError e = record_error([&] { RecordFile{path}; });
    CHECK(e.offset() == 0);
    CHECK(std::string(e.what()).find("header checksum") != std::string::npos);
  }
  SUBCASE("magic") {
    swp::test::flip_byte(path, 0);
    CHECK(std::string(record_error([&] { RecordFile{path}; }).what()).find("bad magic") !=
          std::string::npos);
  }
  SUBCASE("index") {
    swp::test::flip_byte(path, index + 3);
    const RecordError e = record_error([&] { RecordFile{path}; });
    CHECK(e.offset() == index);
    CHECK(std::string(e.what()).find("index checksum") != std::string::npos);
  }
}

TEST_CASE("a truncated file is reported with the offset where it ends") {
  swp::test::TempDir dir;
  const auto path = write_file(dir);
  SUBCASE("inside the records") {
    const std::uint64_t cut = RecordFile(path).entry(6).offset + 100;
    std::filesystem::resize_file(path, cut);
    const RecordError e = record_error([&] { RecordFile{path}; });
    CHECK(e.file() == path);
    CHECK(e.offset() == cut);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
  SUBCASE("inside the header") {
    std::filesystem::resize_file(path, 10);
    const RecordError e = record_error([&] { RecordFile{path}; });
    CHECK(e.offset() == 10);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
}

TEST_CASE("a missing file is reported by name") {
  swp::test::TempDir dir;
  const RecordError e = record_error([&] { RecordFile{dir / "nope.swprec"}; });
  CHECK(e.file() == dir / "nope.swprec");
  CHECK(e.offset() == 0);
  CHECK(std::string(e.what()).find("nope.swprec") != std::string::npos);
  CHECK(std::string(e.what()).find("cannot open") != std::string::npos);
}

TEST_CASE("every crafted file is refused naming the file, the offset and what is wrong") {
  // Overflowing lengths and offsets, truncation, bytes after the index, non-zero flags,
  // reserved fields and padding, a FIFO, a directory, a device: refused when opened (the
  // header and the index) or when the record is read, never a crash, a hang or a wrapped number.
  namespace crafted = swp::test::crafted;
  for (const crafted::Case& c : crafted::cases()) {
    INFO(c.name);
    swp::test::TempDir dir;
    const auto path = dir / "x.swprec";
    c.make(path);
    std::optional<RecordFile> file;
    const auto error = crafted::record_error_within_deadline(path, [&] {
      file.emplace(path);
      file->verify();
    });
    if (!error) continue;
    CHECK(error->file() == path);
    CHECK(error->offset() == c.offset);
    const std::string what = error->what();
    CHECK(what.starts_with(path.string() + " at offset " + std::to_string(c.offset) + ": "));
    CHECK_MESSAGE(what.find(c.why) != std::string::npos, what);
    CHECK(file.has_value() == (c.seen == crafted::Seen::at_read));
    if (file) {  // a record read on its own says the same
      std::optional<std::string> read_error;
      for (std::uint64_t i = 0; i < file->size() && !read_error; ++i) try {
          (void)file->read(i);
        } catch (const RecordError& e) {
          read_error = e.what();
        }
      CHECK(read_error == what);
    }
  }
}

TEST_CASE("a record count larger than the file can hold is refused before its index is allocated") {
  swp::test::TempDir dir;
  const auto path = dir / "huge.swprec";
  // An index of 2^36 entries (1 TiB) right after the header, in a sparse file of 1 TiB: no
  // room for a single frame, and far more memory than there is.
  swp::io::RecordFileHeader header;
  header.index_offset = swp::io::record_header_bytes;
  header.record_count = std::uint64_t{1} << 36;
  header.header_checksum = swp::io::header_checksum(header);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&header), sizeof header);
  }
  std::error_code ec;
  std::filesystem::resize_file(path, header.index_offset + header.record_count * 16, ec);
  if (ec) {
    MESSAGE("skipped: no 1 TiB sparse file here: " << ec.message());
    return;
  }
  const RecordError error = record_error([&] { (void)RecordFile(path); });
  CHECK(error.file() == path);
  CHECK(error.offset() == offsetof(swp::io::RecordFileHeader, record_count));
  CHECK(std::string(error.what())
            .find("record count 68719476736 does not fit in the 0 bytes "
                  "before the index") != std::string::npos);
}

TEST_CASE("verify() reports progress per run of records and skips an empty callback") {
  swp::test::TempDir dir;
  const RecordFile file(write_file(dir));
  CHECK_NOTHROW(file.verify(std::function<void(std::uint64_t)>{}));
  CHECK_NOTHROW(file.verify(static_cast<void (*)(std::uint64_t)>(nullptr)));
  std::uint64_t calls = 0, bytes = 0;
  file.verify([&](std::uint64_t n) {
    ++calls;
    bytes += n;
  });
  CHECK(calls == 1);  // every record of the file in one read of less than 4 MiB
  std::uint64_t frames = 0;
  for (const auto& e : file.index()) frames += swp::io::frame_bytes(e.length);
  CHECK(bytes == frames);
}

TEST_CASE("checksums are XXH3-64 (test vectors of the xxHash project)") {
  // XXH3_64bits("") and of "a" as the xxHash project's own tests give them.
  CHECK(swp::io::checksum({}) == 0x2D06800538D394C2ULL);
  const char a = 'a';
  CHECK(swp::io::checksum(std::as_bytes(std::span(&a, 1))) == 0xE6C632B61E964E1FULL);
}

TEST_CASE("long inputs hash as the reference XXH3 does (the AVX2 path where the CPU has it)") {
  // The value libxxhash's portable build gives for these 100003 bytes.
  std::vector<std::byte> bytes(100003);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>((i * 31 + 7) & 0xff);
  CHECK(swp::io::checksum(bytes) == 0xE0950E66CF107FE8ULL);
}

}  // namespace test_record_file
