// The pread reader: a pool of threads, each read one blocking pread loop (the fallback where
// io_uring is not compiled in or not permitted).

#include <condition_variable>
#include <mutex>
#include <utility>

#include "swp/io/detail/file_reader.hpp"
#include "swp/io/detail/pread_all.hpp"
#include "swp/io/detail/work_pool.hpp"

namespace swp::io::detail {

namespace {
class PreadReader final : public FileReader {
 public:
  PreadReader(std::vector<ReaderFile> files, std::size_t threads)
      : files_(std::move(files)), pool_(threads) {}

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    pool_.post([this, file, offset, into, done = std::move(done)] {
      std::exception_ptr error;
      try {
        pread_all(files_.at(file).fd, files_.at(file).path, into, offset);
      } catch (...) {
        error = std::current_exception();
      }
      done(std::move(error));
    });
  }
  [[nodiscard]] bool completes_on_pool() const noexcept override { return pool_.threads() > 1; }
  [[nodiscard]] ReaderKind kind() const noexcept override { return ReaderKind::pread; }

 private:
  std::vector<ReaderFile> files_;
  WorkPool pool_;  // last: joined (after its queued reads ran) before files_ goes
};
}  // namespace

std::unique_ptr<FileReader> make_pread_reader(std::vector<ReaderFile> files, std::size_t threads) {
  return std::make_unique<PreadReader>(std::move(files), threads);
}

}  // namespace swp::io::detail
