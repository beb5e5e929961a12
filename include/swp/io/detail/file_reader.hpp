#pragma once
// FileReader: the loader's asynchronous read seam, with two implementations chosen in one
// place (make_file_reader): io_uring rings on liburing, and a pread pool.

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "swp/io/loader_options.hpp"

namespace swp::io::detail {

/// Reads byte ranges of a fixed set of open files. `read` returns at once; `done` (which must
/// not throw) runs later on a reader thread with nullptr, or with a RecordError naming the file
/// and the offset (truncated: where the file ended; failed: the OS error), or std::bad_alloc
/// where there was no memory to build that RecordError (made in advance for each file, by both
/// readers: its what() names the file). A `read` that throws (e.g. std::bad_alloc) accepted
/// nothing: its `done` never runs. The destructor waits for every read it accepted to complete
/// (their `done` has run).
class FileReader {
 public:
  using Done = std::function<void(std::exception_ptr)>;
  virtual ~FileReader() = default;
  virtual void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into,
                    Done done) = 0;
  [[nodiscard]] virtual ReaderKind kind() const noexcept = 0;
  /// `done` runs on one of several reader threads (so the loader may do CPU work there without
  /// holding back other reads' completions).
  [[nodiscard]] virtual bool completes_on_pool() const noexcept = 0;
};

/// A file to read: its path (for errors) and an open descriptor (not owned).
struct ReaderFile {
  std::filesystem::path path;
  int fd = -1;
};

/// The reader for `kind` with `threads` threads (automatic: io_uring when compiled in and the
/// kernel allows it, else pread). Errors: std::runtime_error when `kind` is uring and io_uring is
/// unavailable, saying why.
std::unique_ptr<FileReader> make_file_reader(ReaderKind kind, std::vector<ReaderFile> files,
                                             std::size_t threads);

/// For fault-injection tests: when set, every reader make_file_reader makes goes through `wrap`,
/// and the reader it returns is used instead (say, one whose read() throws). Process-wide: set
/// it while no loader is being opened; an empty function (the default) wraps nothing.
using ReaderWrap = std::function<std::unique_ptr<FileReader>(std::unique_ptr<FileReader>)>;
void set_reader_wrap(ReaderWrap wrap);

std::unique_ptr<FileReader> make_pread_reader(std::vector<ReaderFile> files, std::size_t threads);
/// `threads` rings, each with its own thread; nullptr with `why` set when io_uring is not
/// compiled in or not permitted.
std::unique_ptr<FileReader> make_uring_reader(std::vector<ReaderFile> files, std::size_t threads,
                                              std::string& why);

}  // namespace swp::io::detail
