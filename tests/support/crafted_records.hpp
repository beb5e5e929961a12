#pragma once
// A corpus of crafted record files for the io and CLI tests: each case starts from a valid
// file written by RecordWriter (or is a FIFO, a directory or a device named *.swprec) and is
// damaged in one way — lengths and offsets that overflow, a truncated file, bytes after the
// index, non-zero flags, reserved fields and padding — with the error every reader must give:
// the byte offset and a fragment of the message. Checksums are recomputed where the damage
// must get past them, as a hostile file would.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "swp/io/io_errors.hpp"
#include "swp/io/record_format.hpp"
#include "swp/io/record_writer.hpp"

namespace swp::test::crafted {

/// The valid file every case starts from: three records of 5, 16 and 13 bytes (two of them
/// padded), so the layout below is fixed.
inline const std::vector<std::size_t> base_sizes{5, 16, 13};
inline constexpr std::uint64_t frame0 = io::record_header_bytes;                 // 64
inline constexpr std::uint64_t frame1 = frame0 + io::frame_bytes(5);             // 88
inline constexpr std::uint64_t frame2 = frame1 + io::frame_bytes(16);            // 120
inline constexpr std::uint64_t index_at = frame2 + io::frame_bytes(13);          // 152
inline constexpr std::uint64_t file_end = index_at + 3 * io::index_entry_bytes;  // 200
static_assert(frame1 == 88 && frame2 == 120 && index_at == 152 && file_end == 200);

// Header field offsets (record_format.hpp).
inline constexpr std::uint64_t flags_at = 12, count_at = 16, index_offset_at = 24,
                               index_sum_at = 32, data_bytes_at = 40, reserved_at = 56;

/// A file's bytes, with little-endian field access and checksums recomputed on demand.
struct Bytes {
  std::vector<unsigned char> b;

  static Bytes load(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {{std::istreambuf_iterator<char>(in), {}}};
  }
  void save(const std::filesystem::path& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  void put32(std::uint64_t at, std::uint32_t v) { std::memcpy(&b.at(at + 3) - 3, &v, sizeof v); }
  void put64(std::uint64_t at, std::uint64_t v) { std::memcpy(&b.at(at + 7) - 7, &v, sizeof v); }
  /// The header checksum, after a header field changed.
  void seal_header() {
    io::RecordFileHeader h;
    std::memcpy(&h, b.data(), sizeof h);
    put64(48, io::header_checksum(h));
  }
  /// The index checksum of `count` entries at `at`, then the header's.
  void seal_index(std::uint64_t at, std::uint64_t count) {
    put64(index_sum_at,
          io::checksum(std::as_bytes(std::span(b).subspan(at, count * io::index_entry_bytes))));
    seal_header();
  }
};

/// Writes the valid base file to `path` and returns its bytes.
inline Bytes base(const std::filesystem::path& path) {
  io::RecordWriter out(path);
  for (std::size_t i = 0; i < base_sizes.size(); ++i) {
    std::vector<std::byte> payload(base_sizes[i]);
    for (std::size_t k = 0; k < payload.size(); ++k)
      payload[k] = static_cast<std::byte>(0x41 + i * 16 + k);
    out.append(payload);
  }
  out.close();
  return Bytes::load(path);
}

/// When the damage shows: opening the file (RecordFile's constructor, a loader's open), or
/// reading the record (verify(), read(), a loader's batch).
enum class Seen { at_open, at_read };

/// One crafted file and the error it must give.
struct Case {
  const char* name;
  std::function<void(const std::filesystem::path&)> make;  ///< creates the file at the path
  std::uint64_t offset;                                    ///< RecordError::offset()
  std::string why;                                         ///< part of the message
  Seen seen = Seen::at_open;
};

/// Applies `edit` to the base file's bytes and saves them.
inline std::function<void(const std::filesystem::path&)> edited(std::function<void(Bytes&)> edit) {
  return [edit = std::move(edit)](const std::filesystem::path& path) {
    Bytes bytes = base(path);
    edit(bytes);
    bytes.save(path);
  };
}

/// The corpus. Offsets are in the base layout above.
inline std::vector<Case> cases() {
  constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();
  const auto entry = [](std::uint64_t i) { return index_at + i * io::index_entry_bytes; };
  return {
      {"an empty file", edited([](Bytes& f) { f.b.clear(); }), 0,
       "truncated: the file ends inside its 64-byte header"},
      {"a file that ends inside its header", edited([](Bytes& f) { f.b.resize(40); }), 40,
       "truncated: the file ends inside its 64-byte header"},
      {"a file that ends inside its records", edited([](Bytes& f) { f.b.resize(frame2 + 10); }),
       frame2 + 10, "truncated: the file ends at offset 130, before the end of its index"},
      {"a file that ends inside its index", edited([](Bytes& f) { f.b.resize(file_end - 4); }),
       file_end - 4, "truncated: the file ends at offset 196, before the end of its index"},
      {"bytes after the index", edited([](Bytes& f) { f.b.resize(file_end + 9, 0); }), file_end,
       "9 bytes after the end of the index"},
      {"a bad magic", edited([](Bytes& f) { f.b[3] = 'X'; }), 0, "bad magic"},
      {"a version the reader does not know", edited([](Bytes& f) {
         f.put32(8, 2);
         f.seal_header();
       }),
       8, "unsupported format version 2"},
      {"a corrupt header", edited([](Bytes& f) { f.b[20] ^= 0xff; }), 0,
       "header checksum mismatch"},
      {"non-zero header flags", edited([](Bytes& f) {
         f.put32(flags_at, 0x10);
         f.seal_header();
       }),
       flags_at, "header flags are 0x00000010 (format version 1 defines none: they must be 0)"},
      {"a non-zero reserved header field", edited([](Bytes& f) { f.put64(reserved_at, 7); }),
       reserved_at, "reserved header field is 0x0000000000000007 (must be 0)"},
      {"a file whose writer did not close it", edited([](Bytes& f) {
         // The header RecordWriter writes first, and frames after it, but no index.
         for (const std::uint64_t at : {count_at, index_offset_at, index_sum_at, data_bytes_at})
           f.put64(at, 0);
         f.seal_header();
         f.b.resize(index_at);
       }),
       index_offset_at, "incomplete: the header has no index (its writer did not close it)"},
      {"an index offset inside the header", edited([](Bytes& f) {
         f.put64(index_offset_at, 8);
         f.seal_header();
       }),
       index_offset_at, "index offset 8 is inside the 64-byte header"},
      {"an index offset past the end of the file", edited([](Bytes& f) {
         f.put64(index_offset_at, (std::uint64_t{1} << 63) + 8);
         f.seal_header();
       }),
       file_end,
       "truncated: the file ends at offset 200, before the end of its index (3 entries of 16 "
       "bytes from offset 9223372036854775816)"},
      {"an index offset that wraps around with the index's size", edited([](Bytes& f) {
         f.put64(index_offset_at, u64_max - 15);
         f.seal_header();
       }),
       file_end, "truncated: the file ends at offset 200, before the end of its index"},
      {"a record count whose index size wraps to 0 bytes", edited([](Bytes& f) {
         f.put64(count_at, std::uint64_t{1} << 60);
         f.seal_header();
       }),
       file_end,
       "truncated: the file ends at offset 200, before the end of its index "
       "(1152921504606846976 entries of 16 bytes from offset 152)"},
      {"the largest record count", edited([](Bytes& f) {
         f.put64(count_at, u64_max);
         f.seal_header();
       }),
       file_end, "(18446744073709551615 entries of 16 bytes from offset 152)"},
      {"a corrupt index", edited([](Bytes& f) { f.b[index_at + 3] ^= 0xff; }), index_at,
       "index checksum mismatch"},
      // The case: 80 bytes, a header and one index entry of length 2^64 - 16, whose
      // frame size wrapped to 0 and passed the tiling check.
      {"an 80-byte file whose one index entry says 2^64 - 16 bytes",
       [](const std::filesystem::path& path) {
         Bytes f;
         { io::RecordWriter empty(path); }
         f = Bytes::load(path);
         f.b.resize(80, 0);
         f.put64(count_at, 1);
         f.put64(index_offset_at, 64);
         f.put64(64, 64);
         f.put64(72, u64_max - 15);
         f.put64(data_bytes_at, u64_max - 15);
         f.seal_index(64, 1);
         f.save(path);
       },
       64,
       "index entry 0: payload length 18446744073709551600 is over the format's limit of "
       "4294967295 bytes"},
      {"index entries whose frame sizes wrap around to the index", edited([entry](Bytes& f) {
         // 2^63 and 2^63 - 32: frames of 2^63 + 16 and 2^63 - 16 bytes, 0 in all (mod 2^64).
         f.put64(entry(0) + 8, std::uint64_t{1} << 63);
         f.put64(entry(1), frame0 + (std::uint64_t{1} << 63) + 16);
         f.put64(entry(1) + 8, (std::uint64_t{1} << 63) - 32);
         f.seal_index(index_at, 3);
       }),
       entry(0), "index entry 0: payload length 9223372036854775808 is over the format's limit"},
      {"a payload length over 4 GiB - 1", edited([entry](Bytes& f) {
         f.put64(entry(2) + 8, (std::uint64_t{1} << 32) + 13);
         f.seal_index(index_at, 3);
       }),
       entry(2), "index entry 2: payload length 4294967309 is over the format's limit"},
      {"a record that runs into the index", edited([entry](Bytes& f) {
         f.put64(entry(2) + 8, 100);
         f.seal_index(index_at, 3);
       }),
       entry(2),
       "index entry 2: the record of 100 bytes at offset 120 ends at offset 240, past the "
       "start of the index at offset 152"},
      {"an index entry pointing past the end of the file", edited([entry](Bytes& f) {
         f.put64(entry(1), std::uint64_t{1} << 63);
         f.seal_index(index_at, 3);
       }),
       entry(1), "index entry 1 points at offset 9223372036854775808, expected 88"},
      {"records that end before the index starts", edited([entry](Bytes& f) {
         f.put64(entry(2) + 8, 5);
         f.seal_index(index_at, 3);
       }),
       frame2 + io::frame_bytes(5), "records end at offset 144 but the index starts at 152"},
      {"a payload size in the header that the index does not add up to", edited([](Bytes& f) {
         f.put64(data_bytes_at, 35);
         f.seal_header();
       }),
       data_bytes_at, "header says 35 payload bytes, its index 34"},
      {"a corrupt payload", edited([](Bytes& f) { f.b[frame1 + io::frame_header_bytes + 2] ^= 1; }),
       frame1, "checksum mismatch in the record of 16 bytes", Seen::at_read},
      {"a frame length the index disagrees with", edited([](Bytes& f) { f.put32(frame1, 17); }),
       frame1, "corrupt record header: length 17, the index says 16", Seen::at_read},
      {"a non-zero reserved word in a frame header",
       edited([](Bytes& f) { f.put32(frame1 + 4, 1); }), frame1 + 4,
       "corrupt record header: its reserved word is 0x00000001 (must be 0)", Seen::at_read},
      {"non-zero padding after a record",
       edited([](Bytes& f) { f.b[frame2 + io::frame_header_bytes + 13 + 1] = 0xab; }),
       frame2 + io::frame_header_bytes + 13 + 1,
       "padding byte 0xab after the record of 13 bytes at offset 120 (must be 0)", Seen::at_read},
      {"a FIFO",
       [](const std::filesystem::path& path) { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); }, 0,
       "not a regular file (a FIFO)"},
      {"a directory",
       [](const std::filesystem::path& path) { std::filesystem::create_directory(path); }, 0,
       "not a regular file (a directory)"},
      {"a character device",
       [](const std::filesystem::path& path) {
         std::filesystem::create_symlink("/dev/null", path);
       },
       0, "not a regular file (a character device)"},
  };
}

/// Runs `f` on a thread of its own and waits for it at most `limit`. A reader blocked in
/// open() on a FIFO is woken by opening the FIFO's other end, so a hang fails the test
/// instead of hanging it. Returns whether `f` finished in time; rethrows what `f` threw.
inline bool finishes_within(std::chrono::seconds limit, const std::filesystem::path& file,
                            const std::function<void()>& f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(limit) == std::future_status::ready) {
    done.get();
    return true;
  }
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    done.wait();
    if (fd >= 0) ::close(fd);
  }
  return false;
}

/// The RecordError `f` throws within 5 s (empty when it throws none, or hangs: both fail the
/// test).
inline std::optional<io::RecordError> record_error_within_deadline(
    const std::filesystem::path& file, const std::function<void()>& f) {
  std::optional<io::RecordError> error;
  const bool in_time = finishes_within(std::chrono::seconds(5), file, [&] {
    try {
      f();
    } catch (const io::RecordError& e) {
      error = e;
    }
  });
  CHECK_MESSAGE(in_time, "did not finish within 5 s: ", file.string());
  CHECK_MESSAGE(error.has_value(), "no RecordError: ", file.string());
  return error;
}

}  // namespace swp::test::crafted
