// The pread reader: a pool of threads, each read one blocking pread loop (the fallback where
// io_uring is not compiled in or not permitted).

#include <condition_variable>
#include <mutex>
#include <utility>

#include "read_out_of_memory.hpp"
#include "swp/io/detail/file_reader.hpp"
#include "swp/io/detail/pread_all.hpp"
#include "swp/io/detail/work_pool.hpp"

namespace swp::io::detail {

namespace {
class PreadReader final : public FileReader {
 public:
  PreadReader(std::vector<ReaderFile> files, std::size_t threads)
      : files_(std::move(files)), out_of_memory_(out_of_memory_errors(files_)), pool_(threads) {}

  // A read whose RecordError cannot be built for want of memory fails with its file's
  // ReadOutOfMemory (read_error), as the io_uring reader's do; one of a file the reader lacks
  // (files_.at's std::out_of_range) has no file to name.
  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    pool_.post([this, file, offset, into, done = std::move(done)] {
      done(read_error(out_of_memory_error(out_of_memory_, file),
                      [&] { pread_all(files_.at(file).fd, files_.at(file).path, into, offset); }));
    });
  }
  [[nodiscard]] bool completes_on_pool() const noexcept override { return pool_.threads() > 1; }
  [[nodiscard]] ReaderKind kind() const noexcept override { return ReaderKind::pread; }

 private:
  std::vector<ReaderFile> files_;
  OutOfMemory out_of_memory_;  // by file, as files_
  WorkPool pool_;              // last: joined (after its queued reads ran) before the rest goes
};
}  // namespace

std::unique_ptr<FileReader> make_pread_reader(std::vector<ReaderFile> files, std::size_t threads) {
  return std::make_unique<PreadReader>(std::move(files), threads);
}

}  // namespace swp::io::detail
