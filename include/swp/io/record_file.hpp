#pragma once
// RecordFile: an open record file — its validated header and index, random access to records.

#include <cstdint>
#include <filesystem>
#include <span>
#include <type_traits>
#include <vector>

#include "swp/io/io_errors.hpp"
#include "swp/io/record_format.hpp"

namespace swp::io {

/// An open, validated record file. Opening reads the header and the index and checks them
/// (magic, version, header and index checksums, zero flags and reserved word, the index
/// ending the file, every frame inside the data area, lengths within the format's u32);
/// records are read on demand and verified (length, zero reserved word and padding, checksum).
/// Every length and offset is compared with the file size without a sum that could wrap.
///
/// Errors: RecordError naming the file and offset — a missing or unreadable file, or one that
/// is not a regular file (a FIFO, a directory, a device: offset 0; opened non-blocking, so a
/// FIFO never blocks), a file shorter than its header or index says (truncated: the offset
/// where it ends), bytes after the index (where they start), a bad magic, version, checksum,
/// non-zero flag, reserved word or padding byte, a bad index entry (the offset of the header
/// field, index entry, frame or byte at fault), a record count over 65,536 that the bytes
/// before the index cannot hold (checked before the index is allocated), an index that cannot
/// be allocated (its offset). docs/io.md lists every message.
/// Thread safety: const members may be called from any thread (reads use pread).
/// Example:
/// ```
/// swp::io::RecordFile file("data/part-0.swprec");
/// std::vector<std::byte> first = file.read(0);
/// file.verify();  // every checksum, throws at the first bad record
/// ```
class RecordFile {
 public:
  explicit RecordFile(std::filesystem::path path);
  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile();

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return index_.size(); }
  [[nodiscard]] const IndexEntry& entry(std::uint64_t i) const { return index_.at(i); }
  [[nodiscard]] std::span<const IndexEntry> index() const noexcept { return index_; }
  [[nodiscard]] std::uint64_t data_bytes() const noexcept { return data_bytes_; }
  [[nodiscard]] std::uint64_t file_bytes() const noexcept { return file_bytes_; }
  /// The open descriptor (valid while this object lives), for readers issuing their own reads.
  [[nodiscard]] int fd() const noexcept { return fd_; }

  /// Record `i`'s payload, read and verified. std::out_of_range for a bad index.
  [[nodiscard]] std::vector<std::byte> read(std::uint64_t i) const;
  /// Reads and verifies every record in order; throws RecordError at the first bad one.
  /// `on_progress(bytes)` is told the frame bytes of each run of records verified: one call
  /// per read of consecutive records (up to 4 MiB, or one larger record), not one per record,
  /// so a progress display costs nothing per record. The runs' bytes add up to the frames'.
  /// An empty `on_progress` (a null std::function or function pointer) is not called.
  template <class F>
  void verify(F&& on_progress) const;
  void verify() const {
    verify([](std::uint64_t) {});
  }

 private:
  void verify_range(std::uint64_t first, std::uint64_t last, std::vector<std::byte>& buffer) const;

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t data_bytes_ = 0;
  std::vector<IndexEntry> index_;
};

/// Checks the frame of record `entry` read into `frame` (frame_bytes(entry.length) bytes from
/// entry.offset of `file`): its length field, its zero reserved word, its zero padding and its
/// checksum. Returns the payload.
/// Errors: RecordError naming `file` and the offset of the frame (the reserved word, the
/// padding byte) at fault; a length over the format's u32 is refused before any arithmetic.
std::span<const std::byte> verify_frame(const std::filesystem::path& file, const IndexEntry& entry,
                                        std::span<const std::byte> frame);

template <class F>
void RecordFile::verify(F&& on_progress) const {
  bool report = true;
  if constexpr (std::is_constructible_v<bool, F&>) report = static_cast<bool>(on_progress);
  // In chunks of consecutive records (one read each), like the loader's unshuffled reads.
  constexpr std::uint64_t chunk_bytes = std::uint64_t{1} << 22;
  std::vector<std::byte> buffer;
  std::uint64_t first = 0;
  while (first < size()) {
    std::uint64_t last = first + 1;
    std::uint64_t bytes = frame_bytes(index_[first].length);
    while (last < size() && bytes + frame_bytes(index_[last].length) <= chunk_bytes)
      bytes += frame_bytes(index_[last++].length);
    verify_range(first, last, buffer);
    if (report) on_progress(bytes);
    first = last;
  }
}

}  // namespace swp::io
