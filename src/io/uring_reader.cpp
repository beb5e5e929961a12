// The io_uring reader: rings of its own on liburing, each with one thread.
// Not Boost.Asio's random_access_file: that needs BOOST_ASIO_HAS_IO_URING, which changes Asio's
// types (the per-thread handler memory's chunk size), so every translation unit using Asio in
// a process — each consumer of libswp — would have to set it alike. liburing keeps io_uring
// inside libswp: no public type depends on it.

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "read_out_of_memory.hpp"
#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/config.hpp"
#include "swp/io/detail/file_reader.hpp"
#include "swp/io/io_errors.hpp"

#if SWP_HAVE_IO_URING
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#endif

namespace swp::io::detail {

#if SWP_HAVE_IO_URING
namespace {

std::string os_error(int error) { return std::strerror(error); }

// One read: accepted, waiting for room in the ring, or in flight. `into[0, read)` is there.
struct UringRead {
  std::size_t file = 0;
  std::uint64_t offset = 0;
  std::span<std::byte> into;
  FileReader::Done done;
  std::size_t read = 0;
  UringRead* next = nullptr;  // ReadQueue's link
};

// A FIFO of reads linked through UringRead::next (detail::IntrusiveFifo), owning them.
// Queueing a read and moving a queue's reads onto another allocate nothing: the ring's thread
// does both, and an allocation failing there (std::bad_alloc) would have no caller to reach
// but its thread function.
class ReadQueue {
 public:
  ReadQueue() = default;
  ReadQueue(const ReadQueue&) = delete;
  ReadQueue& operator=(const ReadQueue&) = delete;
  // Empty in practice: a ring completes every read it accepted before it goes.
  ~ReadQueue() {
    while (!empty()) (void)pop_front();
  }

  [[nodiscard]] bool empty() const noexcept { return reads_.empty(); }
  void push_back(std::unique_ptr<UringRead> read) noexcept { reads_.push(*read.release()); }
  void push_front(std::unique_ptr<UringRead> read) noexcept { reads_.push_front(*read.release()); }
  // The oldest read; the queue is not empty.
  std::unique_ptr<UringRead> pop_front() noexcept { return std::unique_ptr<UringRead>(reads_.pop()); }
  // Moves every read of `other` to the back of this queue, in order.
  void splice_back(ReadQueue& other) noexcept { reads_.splice_back(other.reads_); }

 private:
  swp::detail::IntrusiveFifo<UringRead, &UringRead::next> reads_;
};

// Rings closed so far. Its release (before a ring's memory is unmapped) and acquire (after a
// new ring is mapped) order the kernel's reuse of a ring's address for ThreadSanitizer, which
// does not see munmap and mmap: since a loader may be torn down on a thread of its own, the
// finished ring thread's writes to the old mapping were otherwise unordered with a new ring
// thread's reads at the same address (a false race report in CI). One atomic per ring.
std::atomic<std::uint64_t> rings_closed{0};

// The io_uring instance, closed on destruction (its thread has exited by then: the kernel
// cancelled what that thread had submitted when it exited).
class UringQueue {
 public:
  explicit UringQueue(unsigned depth) {
    if (const int rc = io_uring_queue_init(depth, &ring_, 0); rc < 0)
      throw std::runtime_error("io_uring_queue_init: " + os_error(-rc));
    (void)rings_closed.load(std::memory_order_acquire);
    // IORING_OP_READ (Linux 5.6): an older kernel would fail every read, not the setup.
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    const bool reads = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_READ) != 0;
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!reads) {
      io_uring_queue_exit(&ring_);
      throw std::runtime_error("this kernel's io_uring has no IORING_OP_READ (Linux < 5.6)");
    }
  }
  ~UringQueue() {
    rings_closed.fetch_add(1, std::memory_order_release);
    io_uring_queue_exit(&ring_);
  }
  UringQueue(const UringQueue&) = delete;
  UringQueue& operator=(const UringQueue&) = delete;

  [[nodiscard]] io_uring* get() noexcept { return &ring_; }

 private:
  io_uring ring_{};
};

// An eventfd that wakes the ring's thread when reads were queued (or the ring stops).
class WakeFd {
 public:
  WakeFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::runtime_error("eventfd: " + os_error(errno));
  }
  ~WakeFd() { ::close(fd_); }
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  // Only fails when the counter would overflow, which leaves it readable anyway.
  void signal() const noexcept { (void)::eventfd_write(fd_, 1); }
  void drain() const noexcept {
    eventfd_t value = 0;
    (void)::eventfd_read(fd_, &value);
  }

 private:
  int fd_;
};

// One ring and its thread. Reads are queued from any thread and submitted by the ring's own:
// io_uring copies a page-cache hit inline on the thread that submits it, so submitting from
// the loader's thread would copy every ring's reads on that one core. Completions (`done`) run
// on the ring's thread too.
class Ring {
 public:
  Ring(std::vector<ReaderFile> files, std::shared_ptr<const OutOfMemory> out_of_memory)
      : files_(std::move(files)),
        out_of_memory_(std::move(out_of_memory)),
        queue_(depth),
        thread_([this] { run(); }) {}
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring() {
    // Every read accepted completes first: the thread returns once none is left.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.signal();
    thread_.join();
  }

  void read(std::unique_ptr<UringRead> read) {
    bool was_empty = false;
    {
      std::lock_guard lock(mutex_);
      was_empty = queued_.empty();
      queued_.push_back(std::move(read));
    }
    // One signal per batch the thread has not taken yet: it takes all of queued_ at once.
    if (was_empty) wake_.signal();
  }

 private:
  // Entries of the submission queue; reads beyond depth - 1 in flight wait in waiting_ (one
  // entry is the wake-up poll's), so the completion queue (twice as deep) never overflows, and
  // an entry is always free: what is prepared or in the kernel is never more than depth.
  static constexpr unsigned depth = 64;
  // A chunk of a read per operation: a length must fit io_uring's 32 bits.
  static constexpr std::size_t max_chunk = std::size_t{1} << 30;

  // The ring's thread. Its own bookkeeping allocates nothing (the queues are linked through the
  // reads, completions are taken into a fixed array), and a read's error that cannot be built
  // for want of memory fails the read with std::bad_alloc (its file's ReadOutOfMemory): an
  // allocation failure here never reaches this function, where it would end the process.
  void run() {
    for (;;) {
      // Armed before queued_ is taken: a read queued after that signals the eventfd, which
      // the poll then sees (one queued before it is taken here anyway).
      if (!wake_armed_) arm_wake();
      bool stopping = false;
      {
        std::lock_guard lock(mutex_);
        waiting_.splice_back(queued_);
        stopping = stopping_;
      }
      while (!waiting_.empty() && in_flight_ < depth - 1)
        if (!start(waiting_.pop_front())) break;
      if (stopping && in_flight_ == 0 && waiting_.empty()) return;
      submit_and_wait();
      reap();
    }
  }

  // Submits what was prepared and waits for a completion (a read's, or the wake-up's). What
  // the kernel did not take stays prepared and goes with the next call.
  void submit_and_wait() {
    const int rc = io_uring_submit_and_wait(queue_.get(), 1);
    if (rc >= 0 || rc == -EINTR) return;
    if (rc == -EAGAIN || rc == -EBUSY) {
      // Out of kernel resources for a moment (EAGAIN), or completions to take first (EBUSY):
      // back to reap(), so that what is in flight completes, then again.
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      return;
    }
    // Anything else means the ring itself is unusable (EBADF, EFAULT, ENXIO: a bug here or a
    // dying process): its reads in the kernel can neither complete nor be failed safely (the
    // kernel may still write into their buffers), so this ends the process, saying why.
    throw std::runtime_error("swp's io_uring reader: io_uring_submit_and_wait failed: " +
                             os_error(-rc));
  }

  void reap() noexcept {
    // Taken off the completion queue first (`done` may run long, and may queue more reads), a
    // fixed number at a time: no more than depth are ever in the kernel, so one round
    // usually takes them all.
    std::array<std::pair<UringRead*, int>, depth> completed;
    for (;;) {
      std::size_t taken = 0;
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0;
      io_uring_for_each_cqe(queue_.get(), head, cqe) {
        completed[taken++] = {static_cast<UringRead*>(io_uring_cqe_get_data(cqe)), cqe->res};
        if (taken == completed.size()) break;
      }
      io_uring_cq_advance(queue_.get(), static_cast<unsigned>(taken));
      for (std::size_t i = 0; i < taken; ++i) {
        auto [read, result] = completed[i];
        if (read == nullptr) {  // the wake-up poll: re-armed, and queued_ taken, next round
          wake_.drain();
          wake_armed_ = false;
        } else {
          --in_flight_;
          complete(std::unique_ptr<UringRead>(read), result);
        }
      }
      if (taken < completed.size()) return;
    }
  }

  // A free entry of the submission queue, or nullptr where every one holds a prepared entry
  // the kernel has not taken (never while depth bounds what is prepared or in flight: the
  // callers then retry on the next round instead of failing).
  io_uring_sqe* next_sqe() noexcept {
    io_uring_sqe* sqe = io_uring_get_sqe(queue_.get());
    if (sqe == nullptr) {  // full of prepared entries: hand them to the kernel first
      (void)io_uring_submit(queue_.get());
      sqe = io_uring_get_sqe(queue_.get());
    }
    return sqe;
  }

  void arm_wake() noexcept {
    io_uring_sqe* sqe = next_sqe();
    if (sqe == nullptr) return;  // the next round arms it
    io_uring_prep_poll_add(sqe, wake_.fd(), POLLIN);
    io_uring_sqe_set_data(sqe, nullptr);
    wake_armed_ = true;
  }

  // Queues what is left of `read` (its next chunk), or finishes it. False where it found no
  // free entry: it then waits at the front of waiting_ for the next round.
  bool start(std::unique_ptr<UringRead> read) noexcept {
    if (read->file >= files_.size()) {  // as the pread reader's files_.at(): an error, not a throw
      auto error = read_error(nullptr, [&] {  // no file to name
        throw std::out_of_range("io_uring reader: no file " + std::to_string(read->file) +
                                " (it has " + std::to_string(files_.size()) + ")");
      });
      finish(std::move(read), std::move(error));
      return true;
    }
    const ReaderFile& file = files_[read->file];
    // A read's offset is a signed off_t in the kernel: one past its range is refused here,
    // as the pread reader does, not left to fail as "Invalid argument".
    constexpr std::uint64_t max_offset = std::numeric_limits<off_t>::max();
    if (read->offset > max_offset || read->into.size() > max_offset - read->offset) {
      auto error = read_error((*out_of_memory_)[read->file], [&] {
        throw RecordError(file.path, read->offset,
                          "a read of " + std::to_string(read->into.size()) + " bytes at offset " +
                              std::to_string(read->offset) + " lies past the end of any file");
      });
      finish(std::move(read), std::move(error));
      return true;
    }
    const std::size_t left = read->into.size() - read->read;
    if (left == 0) {
      finish(std::move(read), nullptr);
      return true;
    }
    io_uring_sqe* sqe = next_sqe();
    if (sqe == nullptr) {
      waiting_.push_front(std::move(read));
      return false;
    }
    io_uring_prep_read(sqe, file.fd, read->into.data() + read->read,
                       static_cast<unsigned>(std::min(left, max_chunk)), read->offset + read->read);
    io_uring_sqe_set_data(sqe, read.release());
    ++in_flight_;
    return true;
  }

  void complete(std::unique_ptr<UringRead> read, int result) noexcept {
    // Nothing read, try again: EINTR where a signal reached the kernel's worker; EAGAIN only
    // for a descriptor opened O_NONBLOCK (on some kernels), which the loader's never are
    // (record_file.cpp clears it), so this does not spin. ECANCELED (the ring torn down, or the
    // submitting thread gone: never while a read is in flight here) and every other error fail the
    // read below.
    if (result == -EINTR || result == -EAGAIN) {
      start(std::move(read));
      return;
    }
    const ReaderFile& file = files_[read->file];  // checked in start()
    const std::uint64_t at = read->offset + read->read;
    if (result <= 0) {
      auto error = read_error((*out_of_memory_)[read->file], [&] {
        if (result < 0) throw RecordError(file.path, at, "read failed: " + os_error(-result));
        throw RecordError(
            file.path, at,
            "truncated: the file ends " + std::to_string(read->into.size() - read->read) +
                " bytes before the end of the read at offset " + std::to_string(read->offset));
      });
      finish(std::move(read), std::move(error));
      return;
    }
    read->read += static_cast<std::size_t>(result);
    start(std::move(read));  // the rest of a short read, or finished
  }

  // `done` throws nothing (FileReader).
  static void finish(std::unique_ptr<UringRead> read, std::exception_ptr error) noexcept {
    read->done(std::move(error));
  }

  const std::vector<ReaderFile> files_;
  const std::shared_ptr<const OutOfMemory> out_of_memory_;  // by file, as files_ (rings share it)
  UringQueue queue_;
  WakeFd wake_;
  std::mutex mutex_;
  ReadQueue queued_;       // guarded by mutex_
  bool stopping_ = false;  // guarded by mutex_
  // The ring's thread only:
  ReadQueue waiting_;        // accepted, not yet submitted
  unsigned in_flight_ = 0;   // reads submitted and not yet completed
  bool wake_armed_ = false;  // the wake-up poll is prepared or in the kernel
  std::thread thread_;       // last: starts once the rest is there
};

class UringReader final : public FileReader {
 public:
  UringReader(const std::vector<ReaderFile>& files, std::size_t rings) {
    const auto out_of_memory = std::make_shared<const OutOfMemory>(out_of_memory_errors(files));
    for (std::size_t i = 0; i < std::max<std::size_t>(rings, 1); ++i)
      rings_.push_back(std::make_unique<Ring>(files, out_of_memory));
  }

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    // Round robin: the loader issues a batch's reads in order, so consecutive batches go to
    // different rings and are copied in parallel.
    const std::size_t ring = next_.fetch_add(1, std::memory_order_relaxed) % rings_.size();
    rings_[ring]->read(std::make_unique<UringRead>(
        UringRead{.file = file, .offset = offset, .into = into, .done = std::move(done)}));
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

namespace {
// set_reader_wrap's function; the mutex orders a test's setting before the loaders it opens.
std::mutex reader_wrap_mutex;
ReaderWrap reader_wrap;

std::unique_ptr<FileReader> wrapped(std::unique_ptr<FileReader> reader) {
  const std::lock_guard lock(reader_wrap_mutex);
  return reader_wrap ? reader_wrap(std::move(reader)) : std::move(reader);
}
}  // namespace

void set_reader_wrap(ReaderWrap wrap) {
  const std::lock_guard lock(reader_wrap_mutex);
  reader_wrap = std::move(wrap);
}

std::unique_ptr<FileReader> make_file_reader(ReaderKind kind, std::vector<ReaderFile> files,
                                             std::size_t threads) {
  if (kind != ReaderKind::pread) {
    std::string why;
    if (auto reader = make_uring_reader(files, threads, why)) return wrapped(std::move(reader));
    if (kind == ReaderKind::uring) throw std::runtime_error("ReaderKind::uring: " + why);
  }
  return wrapped(make_pread_reader(std::move(files), threads));
}

}  // namespace swp::io::detail
