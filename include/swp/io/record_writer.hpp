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
/// A writer dies when its destructor runs because of an exception: one thrown while it lives
/// (std::uncaught_exceptions() has grown since its construction, e.g. a producer's error
/// unwinding through the writer's scope), or a failed write of its own. It then leaves the
/// frames written so far behind the "no index" header, and RecordFile refuses the file as
/// "incomplete: the header has no index (its writer did not close it)". A writer destroyed by
/// an ordinary scope exit closes its file as close() does.
///
/// Memory stays constant, however many records: the writer holds at most `index_block` index
/// entries (1 MiB); beyond, it moves them to a spill file beside the output (unlinked as soon
/// as it is created, so nothing is left behind) and close() copies them after the frames. A
/// file of N records so needs 16 N bytes of disk for the spill until close(), and no memory.
///
/// Completion: append() returns once the frame is in the stdio buffer; close() once everything
/// was written and flushed to the OS (not fsync'ed). Errors: std::system_error naming the
/// file when it cannot be created or written; std::length_error for a payload over 4 GiB - 1;
/// append after close throws std::logic_error; close() after a failed write throws
/// std::logic_error and leaves the file incomplete. The destructor closes on an ordinary scope
/// exit (errors swallowed: call close() to see them) and leaves the file incomplete while an
/// exception unwinds (above).
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
  /// Writes the index and the header; idempotent. After a failed write it closes the file
  /// incomplete and throws std::logic_error naming it.
  void close();

  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write(const void* data, std::size_t bytes);
  void spill_index();
  [[nodiscard]] bool write_index(std::FILE* file, std::uint64_t& checksum);
  void abandon() noexcept;

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::FILE* spill_ = nullptr;  // index entries moved out of index_, in order (none: null)
  std::uint64_t offset_ = 0;
  std::uint64_t data_bytes_ = 0;
  std::uint64_t records_ = 0;
  std::vector<IndexEntry> index_;  // the entries after the spilled ones, at most index_block
  // The exceptions in flight when the writer was made: more at destruction means one unwinds
  // through its scope, and the file stays incomplete.
  int exceptions_at_construction_ = 0;
  bool write_failed_ = false;  // a frame may be half written: the file must not be closed
};

}  // namespace swp::io
