#pragma once
// The record file format (docs/io.md): a 64-byte header, record frames (length + checksum +
// payload, padded to 8 bytes), then an index of every frame's offset and length.
//
//   offset 0   header   magic "SWPRECv1", version, record count, index offset, checksums
//   offset 64  frames   u32 payload length, u32 zero, u64 XXH3-64 of the payload, payload,
//                       zero padding to a multiple of 8
//   index      entries  u64 frame offset, u64 payload length, one per record, in order
//
// All integers are little-endian. The header's checksum covers its first 48 bytes, the index
// checksum the whole index, so a torn or overwritten header or index is reported as such.
// Readers refuse what must be zero and is not (flags, the reserved words, padding), and bytes
// after the index: the index ends the file.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace swp::io {

static_assert(std::endian::native == std::endian::little,
              "the record format is little-endian and read in place");

inline constexpr std::array<char, 8> record_magic{'S', 'W', 'P', 'R', 'E', 'C', 'v', '1'};
inline constexpr std::uint32_t record_format_version = 1;
inline constexpr std::size_t record_header_bytes = 64;
inline constexpr std::size_t frame_header_bytes = 16;
inline constexpr std::size_t index_entry_bytes = 16;
/// The file extension `swp data gen` writes and Loader::open_dir reads.
inline constexpr const char* record_file_extension = ".swprec";

/// The file header as stored at offset 0.
struct RecordFileHeader {
  std::array<char, 8> magic = record_magic;
  std::uint32_t version = record_format_version;
  std::uint32_t flags = 0;  ///< none defined in version 1: must be 0
  std::uint64_t record_count = 0;
  std::uint64_t index_offset = 0;
  std::uint64_t index_checksum = 0;
  std::uint64_t data_bytes = 0;       ///< payload bytes of all records (for progress and checks)
  std::uint64_t header_checksum = 0;  ///< XXH3-64 of the 48 bytes before it
  std::uint64_t reserved = 0;         ///< must be 0 (not covered by the header checksum)
};
static_assert(sizeof(RecordFileHeader) == record_header_bytes);

/// A record frame's header, in front of its payload.
struct FrameHeader {
  std::uint32_t length = 0;
  std::uint32_t zero = 0;  ///< must be 0
  std::uint64_t checksum = 0;
};
static_assert(sizeof(FrameHeader) == frame_header_bytes);

/// One index entry: where record i's frame starts and its payload length.
struct IndexEntry {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
static_assert(sizeof(IndexEntry) == index_entry_bytes);

/// The frame size of a payload of `length` bytes: header, payload, padding to 8. Only for
/// lengths the format allows (at most 2^32 - 1): a larger one would wrap.
[[nodiscard]] constexpr std::uint64_t frame_bytes(std::uint64_t length) noexcept {
  return frame_header_bytes + ((length + 7) & ~std::uint64_t{7});
}

/// XXH3-64 (libxxhash) of `bytes`: the checksum of payloads, the index and the header.
[[nodiscard]] std::uint64_t checksum(std::span<const std::byte> bytes) noexcept;

/// The header checksum of `header` (over its first 48 bytes).
[[nodiscard]] std::uint64_t header_checksum(const RecordFileHeader& header) noexcept;

}  // namespace swp::io
