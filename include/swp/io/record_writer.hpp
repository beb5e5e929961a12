#pragma once
// RecordWriter: writes one record file (record_format.hpp), record by record.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <vector>

#include "swp/io/record_format.hpp"

namespace swp::io {

/// Writes a record file: `append` each payload, then `close()` writes the index and the final
/// header. Until close() the header on disk says "no records", so a file whose writer died is
/// reported as incomplete, never read as a shorter dataset.
///
/// Memory stays constant, however many records: the writer holds at most `index_block` index
/// entries (1 MiB); beyond, it moves them to a spill file beside the output (unlinked as soon
/// as it is created, so nothing is left behind) and close() copies them after the frames. A
/// file of N records so needs 16 N bytes of disk for the spill until close(), and no memory.
///
/// Completion: append() returns once the frame is in the stdio buffer; close() once everything
/// was written and flushed to the OS (not fsync'ed). Errors: std::system_error naming the
/// file when it cannot be created or written; std::length_error for a payload over 4 GiB - 1;
/// append after close throws std::logic_error. The destructor closes (errors swallowed: call
/// close() to see them).
/// Example:
/// ```
/// swp::io::RecordWriter out("data/part-0.swprec");
/// out.append(std::as_bytes(std::span(sample)));
/// out.close();
/// ```
class RecordWriter {
 public:
  /// The index entries kept in memory before they go to the spill file.
  static constexpr std::size_t index_block = std::size_t{1} << 16;

  explicit RecordWriter(std::filesystem::path path);
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  ~RecordWriter();

  /// Appends one record; returns its index in the file.
  std::uint64_t append(std::span<const std::byte> payload);
  /// Writes the index and the header; idempotent.
  void close();

  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write(const void* data, std::size_t bytes);
  void spill_index();
  [[nodiscard]] bool write_index(std::FILE* file, std::uint64_t& checksum);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::FILE* spill_ = nullptr;  // index entries moved out of index_, in order (none: null)
  std::uint64_t offset_ = 0;
  std::uint64_t data_bytes_ = 0;
  std::uint64_t records_ = 0;
  std::vector<IndexEntry> index_;  // the entries after the spilled ones, at most index_block
};

}  // namespace swp::io
