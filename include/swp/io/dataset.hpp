#pragma once
// Datasets: a directory of record files — listing them, writing a test dataset, checking one.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace swp::io {

/// The record files of `dir` (names ending in .swprec), sorted by name: the order a loader
/// reads them in. Errors: RecordError (offset 0) when `dir` is missing, not a directory, or
/// holds no record file.
std::vector<std::filesystem::path> list_dataset(const std::filesystem::path& dir);

/// What `generate_dataset` writes.
struct GenerateOptions {
  std::uint64_t records = 1000;  ///< records in all
  std::uint64_t bytes = 4096;    ///< payload bytes per record (at least 8)
  std::uint64_t files = 4;       ///< files to spread them over (generated_file_name)
  std::uint64_t seed = 1;        ///< the payload contents' seed
};

/// The name generate_dataset gives file `file` of `files`: "part-" and the number, zero-padded
/// to 5 digits or to the width of files - 1 when that is wider (part-000000.swprec ... for
/// 100,001 files and more), then ".swprec": the same width for every file of the dataset, so
/// list_dataset's name order is the order the records were written in.
[[nodiscard]] std::string generated_file_name(std::uint64_t file, std::uint64_t files);

/// Writes a test dataset into `dir` (created if missing): `records` records of `bytes` bytes,
/// in consecutive runs over `files` files. Record g's payload starts with g (u64) and is filled
/// with a pseudo-random stream of (seed, g), so a reader can tell which record it got.
/// `on_progress(records_written)` is called now and then (may be empty). Returns the files.
/// Errors: std::invalid_argument for records or files 0, bytes < 8, files > records. Once
/// writing began, any exception (a file that cannot be written, one thrown by on_progress)
/// stops it and leaves the file being written incomplete — its header has no index, so
/// RecordFile and check_dataset refuse it rather than read a shorter dataset — and is thrown
/// as a RecordError naming that file (offset 0), the cause nested (std::throw_with_nested) and
/// in what(). The files before it are complete.
std::vector<std::filesystem::path> generate_dataset(
    const std::filesystem::path& dir, const GenerateOptions& options,
    const std::function<void(std::uint64_t)>& on_progress = {});

/// The global record number a generated payload starts with.
[[nodiscard]] std::uint64_t generated_record_id(std::span<const std::byte> payload);

/// What check_dataset saw.
struct CheckSummary {
  std::uint64_t files = 0;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;  ///< file bytes read
};

/// Opens every record file of `dir` and verifies every header, index and record checksum, in
/// file order. `on_progress(bytes_read_so_far, bytes_total)` is called now and then.
/// Errors: RecordError naming the first bad file and offset (a missing directory as in
/// list_dataset).
CheckSummary check_dataset(
    const std::filesystem::path& dir,
    const std::function<void(std::uint64_t, std::uint64_t)>& on_progress = {});

}  // namespace swp::io
