#pragma once
// RecordWriter: writes one record file (record_format.hpp), record by record.

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
  explicit RecordWriter(std::filesystem::path path);
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  ~RecordWriter();

  /// Appends one record; returns its index in the file.
  std::uint64_t append(std::span<const std::byte> payload);
  /// Writes the index and the header; idempotent.
  void close();

  [[nodiscard]] std::uint64_t records() const noexcept { return index_.size(); }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write(const void* data, std::size_t bytes);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::uint64_t offset_ = 0;
  std::uint64_t data_bytes_ = 0;
  std::vector<IndexEntry> index_;
};

}  // namespace swp::io
