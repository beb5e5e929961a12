// The io_uring reader: Boost.Asio's random_access_file on its own io_context and thread.
// Compiled with BOOST_ASIO_HAS_IO_URING (set for the whole project where liburing is found,
// see meson.build: asio's types must be configured alike in every translation unit).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "swp/io/detail/file_reader.hpp"
#include "swp/io/io_errors.hpp"

#if defined(BOOST_ASIO_HAS_IO_URING)
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/random_access_file.hpp>
#include <boost/asio/read_at.hpp>
#endif

namespace swp::io::detail {

#if defined(BOOST_ASIO_HAS_IO_URING)
namespace {
namespace asio = boost::asio;

// One io_context, its thread and its own file objects (dup'ed descriptors): a page-cache hit
// is copied by io_uring inline on the thread that submits it, so a reader with one ring would
// copy on one core only. Rings share nothing, so no asio object is touched by two threads.
class Ring {
 public:
  explicit Ring(const std::vector<ReaderFile>& files) : work_(ctx_.get_executor()) {
    files_.reserve(files.size());
    for (const ReaderFile& f : files) {
      const int fd = ::dup(f.fd);
      if (fd < 0) throw std::runtime_error("dup " + f.path.string() + ": " + std::strerror(errno));
      // Opening the first file starts asio's io_uring service: an io_uring the kernel (or a
      // seccomp filter) refuses throws here, and make_file_reader falls back to pread.
      files_.emplace_back(ctx_, fd);
      paths_.push_back(f.path);
    }
    thread_ = std::thread([this] { ctx_.run(); });
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() {
    // Every read accepted completes before the io_context stops: the work guard goes, run()
    // returns once no operation is outstanding.
    work_.reset();
    thread_.join();
  }

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into,
            FileReader::Done done) {
    // Operations start on the ring's own thread only.
    asio::post(ctx_, [this, file, offset, into, done = std::move(done)]() mutable {
      asio::async_read_at(
          files_[file], offset, asio::buffer(into.data(), into.size()),
          // All that is left in one operation: asio's own conditions (transfer_all) cap each
          // read at 64 KiB, which turns a batch into a chain of round trips.
          [size = into.size()](const boost::system::error_code& ec, std::size_t n) {
            return ec ? std::size_t{0} : size - n;
          },
          [this, file, offset, into, done = std::move(done)](const boost::system::error_code& ec,
                                                             std::size_t n) {
            std::exception_ptr error;
            if (n < into.size()) {
              const std::uint64_t at = offset + n;
              error = std::make_exception_ptr(
                  ec == asio::error::eof || !ec
                      ? RecordError(paths_[file], at,
                                    "truncated: the file ends " + std::to_string(into.size() - n) +
                                        " bytes before the end of the read at offset " +
                                        std::to_string(offset))
                      : RecordError(paths_[file], at, "read failed: " + ec.message()));
            }
            done(std::move(error));
          });
    });
  }

 private:
  asio::io_context ctx_{1};
  std::vector<std::filesystem::path> paths_;
  std::vector<asio::random_access_file> files_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

class UringReader final : public FileReader {
 public:
  UringReader(const std::vector<ReaderFile>& files, std::size_t rings) {
    for (std::size_t i = 0; i < std::max<std::size_t>(rings, 1); ++i)
      rings_.push_back(std::make_unique<Ring>(files));
  }

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    // Round robin: the loader issues a batch's reads in order, so consecutive batches go to
    // different rings and are copied in parallel.
    const std::size_t ring = next_.fetch_add(1, std::memory_order_relaxed) % rings_.size();
    rings_[ring]->read(file, offset, into, std::move(done));
  }
  [[nodiscard]] bool completes_on_pool() const noexcept override { return rings_.size() > 1; }
  [[nodiscard]] ReaderKind kind() const noexcept override { return ReaderKind::uring; }

 private:
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<std::size_t> next_{0};
};
}  // namespace

std::unique_ptr<FileReader> make_uring_reader(std::vector<ReaderFile> files, std::size_t threads,
                                              std::string& why) {
  try {
    return std::make_unique<UringReader>(files, threads);
  } catch (const std::exception& e) {
    why = std::string("io_uring is not usable here: ") + e.what();
    return nullptr;
  }
}
#else
std::unique_ptr<FileReader> make_uring_reader(std::vector<ReaderFile>, std::size_t,
                                              std::string& why) {
  why = "swp was built without io_uring (liburing-dev was not found at configure time)";
  return nullptr;
}
#endif

std::unique_ptr<FileReader> make_file_reader(ReaderKind kind, std::vector<ReaderFile> files,
                                             std::size_t threads) {
  if (kind != ReaderKind::pread) {
    std::string why;
    if (auto reader = make_uring_reader(files, threads, why)) return reader;
    if (kind == ReaderKind::uring) throw std::runtime_error("ReaderKind::uring: " + why);
  }
  return make_pread_reader(std::move(files), threads);
}

}  // namespace swp::io::detail
