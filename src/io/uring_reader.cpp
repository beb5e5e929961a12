// The io_uring reader: Boost.Asio's random_access_file on its own io_context and thread.
// Compiled with BOOST_ASIO_HAS_IO_URING (set for the whole project where liburing is found,
// see meson.build: asio's types must be configured alike in every translation unit).

#include <unistd.h>

#include <cerrno>
#include <cstring>
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

class UringReader final : public FileReader {
 public:
  explicit UringReader(std::vector<ReaderFile> files) : paths_(), work_(ctx_.get_executor()) {
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

  ~UringReader() override {
    // Every read accepted completes before the io_context stops: the work guard goes, run()
    // returns once no operation is outstanding.
    work_.reset();
    thread_.join();
  }

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    // Operations on a file object start on the io_context's thread only (one thread: no
    // object is touched concurrently).
    asio::post(ctx_, [this, file, offset, into, done = std::move(done)]() mutable {
      asio::async_read_at(
          files_[file], offset, asio::buffer(into.data(), into.size()),
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
  [[nodiscard]] ReaderKind kind() const noexcept override { return ReaderKind::uring; }

 private:
  asio::io_context ctx_{1};
  std::vector<std::filesystem::path> paths_;
  std::vector<asio::random_access_file> files_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};
}  // namespace

std::unique_ptr<FileReader> make_uring_reader(std::vector<ReaderFile> files, std::string& why) {
  try {
    return std::make_unique<UringReader>(std::move(files));
  } catch (const std::exception& e) {
    why = std::string("io_uring is not usable here: ") + e.what();
    return nullptr;
  }
}
#else
std::unique_ptr<FileReader> make_uring_reader(std::vector<ReaderFile>, std::string& why) {
  why = "swp was built without io_uring (liburing-dev was not found at configure time)";
  return nullptr;
}
#endif

std::unique_ptr<FileReader> make_file_reader(ReaderKind kind, std::vector<ReaderFile> files,
                                             std::size_t threads) {
  if (kind != ReaderKind::pread) {
    std::string why;
    if (auto reader = make_uring_reader(files, why)) return reader;
    if (kind == ReaderKind::uring) throw std::runtime_error("ReaderKind::uring: " + why);
  }
  return make_pread_reader(std::move(files), threads);
}

}  // namespace swp::io::detail
