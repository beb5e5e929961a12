#pragma once
// The errors of the io layer: a record file that is missing, truncated or corrupt (naming the
// file and the byte offset), and a loader's failure as its consumer sees it.

#include <cstdint>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace swp::io {

/// A record file could not be used: missing or unreadable, truncated, or a checksum that does
/// not match. `file()` and `offset()` name where (offset: the byte offset in the file of the
/// header, index entry or record frame at fault); what() says both and why.
class RecordError : public std::runtime_error {
 public:
  RecordError(std::filesystem::path file, std::uint64_t offset, const std::string& why);
  [[nodiscard]] const std::filesystem::path& file() const noexcept { return file_; }
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

 private:
  std::filesystem::path file_;
  std::uint64_t offset_;
};

/// A loader failed (like TaskError for a task): thrown from the consumer's next `next()` /
/// `take()` (and so from a pipeline's progress(), nested in CallbackError) once the reads in
/// flight drained. `loader()` is the loader's name, `nested()` the cause (usually RecordError).
class LoaderError : public std::runtime_error {
 public:
  LoaderError(std::string loader, std::exception_ptr cause);
  [[nodiscard]] const std::string& loader() const noexcept { return loader_; }
  [[nodiscard]] const std::exception_ptr& nested() const noexcept { return cause_; }

 private:
  std::string loader_;
  std::exception_ptr cause_;
};

}  // namespace swp::io
