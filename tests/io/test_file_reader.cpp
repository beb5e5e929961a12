// The loader's two readers behind FileReader, driven directly: whole ranges however the kernel
// splits them, errors naming the file and the offset, reads beyond a ring's depth, and a
// destructor that waits for every read it accepted, and a reader thread that runs out of memory.
// Both readers (io_uring: where it works).

#include "swp/io/detail/file_reader.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/loader_rig.hpp"
#include "support/temp_dir.hpp"
#include "swp/io/io_errors.hpp"

namespace test_file_reader {  // each test file's names apart (unity builds)

namespace {

using swp::io::detail::FileReader;
using swp::io::detail::ReaderFile;
using swp::test::UsePread;
using swp::test::UseUring;

// `Reader`'s reader with `threads` threads, or nullptr (the test then skips, saying why) where
// io_uring is not compiled in or the kernel refuses it.
template <class Reader>
std::unique_ptr<FileReader> make_reader(std::vector<ReaderFile> files, std::size_t threads) {
  try {
    auto reader = swp::io::detail::make_file_reader(Reader::kind, std::move(files), threads);
    CHECK(reader->kind() == Reader::kind);
    return reader;
  } catch (const std::runtime_error& e) {
    if (Reader::kind != swp::io::ReaderKind::uring) throw;
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

// An open descriptor, closed at the end (after the reader that reads it: declare it first).
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { ::close(fd); }
};

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(n);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  return bytes;
}

std::filesystem::path write_file(const swp::test::TempDir& dir, const std::string& name,
                                 std::span<const std::byte> bytes) {
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// What the reads' `done` callbacks were given, by read.
class Completions {
 public:
  explicit Completions(std::size_t reads) : errors_(reads), done_(reads) {}

  FileReader::Done done(std::size_t read) {
    return [this, read](std::exception_ptr error) {
      std::lock_guard lock(mutex_);
      CHECK_FALSE(done_[read]);  // once each
      errors_[read] = std::move(error);
      done_[read] = true;
      ++count_;
    };
  }
  [[nodiscard]] std::size_t count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  /// Waits (30 s at most) until every read completed.
  void wait_all() const {
    swp::test::wait_until([this] { return count() == done_.size(); });
  }
  [[nodiscard]] std::exception_ptr error(std::size_t read) const {
    std::lock_guard lock(mutex_);
    return errors_[read];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::exception_ptr> errors_;
  std::vector<bool> done_;
  std::size_t count_ = 0;
};

// The RecordError a read completed with (fails the test if it is none or another error).
swp::io::RecordError record_error(const std::exception_ptr& error) {
  REQUIRE(error != nullptr);
  try {
    std::rethrow_exception(error);
  } catch (const swp::io::RecordError& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("not a RecordError: " << e.what());
  }
  return {{}, 0, ""};
}

// One read for ArmedReads: a range of a file, and what its `done` was given.
struct ArmedRead {
  std::size_t file;
  std::uint64_t offset;
  std::vector<std::byte> into;
  std::exception_ptr error;
};

// Reads `reads` with a reader of one thread, while that thread's nth allocation fails
// (swp::test::FailNthAllocation, armed on it): a first read's completion issues them all and
// arms the failure, the last of them to complete disarms it. So the failure can hit anything
// the reader's thread does for them: taking them from its queue, submitting them, reaping
// their completions, building a failed read's error. Nothing here allocates while armed (no
// doctest assertion either). Returns whether the allocation failed; nullopt (the test then
// skips, saying why) where the reader cannot be made.
template <class Reader>
std::optional<bool> read_armed(std::vector<ReaderFile> files, std::vector<ArmedRead>& reads,
                               std::size_t nth) {
  auto reader = make_reader<Reader>(std::move(files), 1);
  if (!reader) return std::nullopt;
  struct State {
    std::unique_ptr<swp::test::FailNthAllocation> fail;
    std::size_t left = 0;  // the reader's one thread only
    bool fired = false;
    std::atomic<bool> finished{false};
    std::exception_ptr first_error;
  } state;
  state.left = reads.size();
  std::vector<std::byte> first(16);
  reader->read(0, 0, first, [&](std::exception_ptr error) {
    state.first_error = std::move(error);
    for (auto& r : reads)
      reader->read(r.file, r.offset, r.into, [&](std::exception_ptr e) {
        r.error = std::move(e);
        if (--state.left > 0) return;
        state.fired = state.fail->fired();
        state.fail.reset();
        state.finished = true;
      });
    state.fail = std::make_unique<swp::test::FailNthAllocation>(nth);
  });
  swp::test::wait_until([&] { return state.finished.load(); });
  reader.reset();
  CHECK(state.first_error == nullptr);
  return state.fired;
}

bool is_bad_alloc(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

TEST_CASE_TEMPLATE("a reader reads each range whole, more at once than a ring holds", Reader,
                   UseUring, UsePread) {
  swp::test::TempDir dir;
  const auto bytes = random_bytes(std::size_t{3} << 20, 7);
  const Fd fd(::open(write_file(dir, "f", bytes).c_str(), O_RDONLY | O_CLOEXEC));
  // One thread: 400 reads at once on one io_uring ring, far beyond its 63 in flight.
  auto reader = make_reader<Reader>({{dir / "f", fd.fd}}, 1);
  if (!reader) return;
  struct Range {
    std::uint64_t offset;
    std::size_t size;
  };
  std::vector<Range> ranges{{0, bytes.size()}, {12345, 0}, {bytes.size() - 1, 1}};
  std::mt19937 rng(3);
  while (ranges.size() < 400) {
    const std::uint64_t offset = rng() % bytes.size();
    ranges.push_back({offset, std::min<std::size_t>(rng() % 9000, bytes.size() - offset)});
  }
  std::vector<std::vector<std::byte>> into;
  for (const Range& r : ranges) into.emplace_back(r.size);
  Completions completions(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i)
    reader->read(0, ranges[i].offset, into[i], completions.done(i));
  completions.wait_all();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    CAPTURE(i);
    CHECK(completions.error(i) == nullptr);
    CHECK(std::equal(into[i].begin(), into[i].end(),
                     bytes.begin() + static_cast<std::ptrdiff_t>(ranges[i].offset)));
  }
}

TEST_CASE_TEMPLATE("a read past the end of a file fails where the file ends, naming it", Reader,
                   UseUring, UsePread) {
  swp::test::TempDir dir;
  const auto path = write_file(dir, "short", random_bytes(1000, 1));
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto reader = make_reader<Reader>({{path, fd.fd}}, 2);
  if (!reader) return;
  std::vector<std::byte> a(100);
  std::vector<std::byte> b(100);
  Completions completions(2);
  reader->read(0, 950, a, completions.done(0));   // 50 bytes there: a short read, then the end
  reader->read(0, 2000, b, completions.done(1));  // nothing there
  completions.wait_all();
  const auto at_end = record_error(completions.error(0));
  CHECK(at_end.file() == path);
  CHECK(at_end.offset() == 1000);
  CHECK(std::string(at_end.what()) ==
        path.string() +
            " at offset 1000: truncated: the file ends 50 bytes before the end of the read at "
            "offset 950");
  const auto beyond = record_error(completions.error(1));
  CHECK(beyond.offset() == 2000);
  CHECK(std::string(beyond.what()).find("truncated: the file ends 100 bytes") != std::string::npos);
}

TEST_CASE_TEMPLATE("a read the OS refuses fails naming the file, the offset and the OS error",
                   Reader, UseUring, UsePread) {
  swp::test::TempDir dir;
  const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto reader = make_reader<Reader>({{dir.path(), fd.fd}}, 1);
  if (!reader) return;
  std::vector<std::byte> into(64);
  Completions completions(1);
  reader->read(0, 4096, into, completions.done(0));
  completions.wait_all();
  const auto error = record_error(completions.error(0));
  CHECK(error.file() == dir.path());
  CHECK(error.offset() == 4096);
  CHECK(std::string(error.what()) ==
        dir.path().string() + " at offset 4096: read failed: " + std::strerror(EISDIR));
}

TEST_CASE_TEMPLATE("a read beyond any offset a file can have, or of a file it lacks, fails in its "
                   "callback",
                   Reader, UseUring, UsePread) {
  swp::test::TempDir dir;
  const auto path = write_file(dir, "f", random_bytes(100, 2));
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto reader = make_reader<Reader>({{path, fd.fd}}, 1);
  if (!reader) return;
  std::vector<std::byte> into(16);
  Completions completions(2);
  const std::uint64_t huge = std::uint64_t{1} << 63;  // past off_t's range
  reader->read(0, huge, into, completions.done(0));
  reader->read(5, 0, into, completions.done(1));  // the reader has file 0 only
  completions.wait_all();
  const auto past = record_error(completions.error(0));
  CHECK(past.offset() == huge);
  CHECK(std::string(past.what()).find("lies past the end of any file") != std::string::npos);
  // A caller's bug, not the file's: reported, and the reader's thread goes on.
  CHECK_THROWS_AS(std::rethrow_exception(completions.error(1)), std::out_of_range);
  Completions after(1);
  reader->read(0, 0, std::span(into).first(10), after.done(0));
  after.wait_all();
  CHECK(after.error(0) == nullptr);
}

TEST_CASE_TEMPLATE("destroying a reader waits until every read it accepted completed", Reader,
                   UseUring, UsePread) {
  swp::test::TempDir dir;
  const auto bytes = random_bytes(std::size_t{1} << 20, 5);
  const auto path = write_file(dir, "f", bytes);
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto reader = make_reader<Reader>({{path, fd.fd}}, 2);
  if (!reader) return;
  constexpr std::size_t reads = 500;
  std::vector<std::vector<std::byte>> into(reads, std::vector<std::byte>(4096));
  Completions completions(reads);
  for (std::size_t i = 0; i < reads; ++i)
    reader->read(0, (i * 4096) % bytes.size(), into[i], completions.done(i));
  // Destroyed at once, with most reads still queued or in the kernel, on a thread of its own:
  // a destructor that did not return would fail the wait below instead of hanging the suite.
  std::atomic<bool> destroyed{false};
  std::size_t completed_when_destroyed = 0;
  std::thread destroy([&] {
    reader.reset();
    completed_when_destroyed = completions.count();
    destroyed = true;
  });
  swp::test::wait_until([&] { return destroyed.load(); });
  destroy.join();
  CHECK(completed_when_destroyed == reads);
  for (std::size_t i = 0; i < reads; ++i) CHECK(completions.error(i) == nullptr);
}

TEST_CASE("an io_uring read the kernel returns short goes on where it stopped") {
  // A pipe: io_uring returns what is there (a short read) and the reader asks for the rest,
  // which comes later. (The loader reads regular files; a pipe is where short reads are sure.)
  int ends[2] = {-1, -1};
  REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
  const Fd read_end(ends[0]);
  const Fd write_end(ends[1]);
  auto reader = make_reader<UseUring>({{"pipe", read_end.fd}}, 1);
  if (!reader) return;
  const auto bytes = random_bytes(300, 9);
  std::vector<std::byte> into(300);
  for (std::size_t i = 0; i < into.size(); ++i) into[i] = ~bytes[i];  // unlike what comes
  Completions completions(1);
  const auto write_part = [&](std::size_t from, std::size_t n) {
    REQUIRE(::write(write_end.fd, bytes.data() + from, n) == static_cast<ssize_t>(n));
  };
  write_part(0, 100);
  reader->read(0, 0, into, completions.done(0));
  // Its first 100 bytes arrived; the read is not done before the rest is there.
  swp::test::wait_until([&] { return std::atomic_ref(into[99]).load() == bytes[99]; });
  CHECK(completions.count() == 0);
  write_part(100, 150);
  write_part(250, 50);
  completions.wait_all();
  CHECK(completions.error(0) == nullptr);
  CHECK(into == bytes);
}

TEST_CASE_TEMPLATE("a reader's thread running out of memory fails the read it was describing, "
                   "never the process",
                   Reader, UseUring, UsePread) {
  if (!swp::test::allocation_failures_injectable()) {
    MESSAGE("skipped: allocation failures are injected only where operator new is replaced");
    return;
  }
  swp::test::TempDir dir;
  const auto bytes = random_bytes(std::size_t{1} << 20, 11);
  const auto path = write_file(dir, "f", bytes);
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const Fd dir_fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::vector<ReaderFile> files{{path, fd.fd}, {dir.path(), dir_fd.fd}};
  // More than a ring holds at once (63), so that some wait for room; and four that fail: the
  // end of the file, an OS error (EISDIR), an offset past off_t, a file the reader lacks.
  const auto make_reads = [&] {
    std::vector<ArmedRead> reads;
    for (std::size_t i = 0; i < 150; ++i)
      reads.push_back({0, (i * 7919) % (bytes.size() - 4096), std::vector<std::byte>(4096), {}});
    reads.insert(reads.begin() + 20, {0, bytes.size() - 10, std::vector<std::byte>(100), {}});
    reads.insert(reads.begin() + 70, {1, 4096, std::vector<std::byte>(64), {}});
    reads.insert(reads.begin() + 100, {0, std::uint64_t{1} << 63, std::vector<std::byte>(8), {}});
    reads.insert(reads.begin() + 130, {7, 0, std::vector<std::byte>(8), {}});
    return reads;
  };
  const auto failing = [](const ArmedRead& r) { return r.file != 0 || r.into.size() != 4096; };

  SUBCASE("its bookkeeping allocates nothing: reads that succeed never see the failure") {
    auto reads = make_reads();
    std::erase_if(reads, failing);
    const auto fired = read_armed<Reader>(files, reads, 1);
    if (!fired) return;
    CHECK_FALSE(*fired);
    for (const auto& r : reads) {
      CHECK(r.error == nullptr);
      CHECK(std::equal(r.into.begin(), r.into.end(),
                       bytes.begin() + static_cast<std::ptrdiff_t>(r.offset)));
    }
  }

  SUBCASE("each allocation failing in turn: every read completes, a failed one with its error or "
          "std::bad_alloc") {
    std::size_t failures = 0;
    for (std::size_t nth = 1;; ++nth) {
      CAPTURE(nth);
      REQUIRE(nth < 1000);
      auto reads = make_reads();
      const auto fired = read_armed<Reader>(files, reads, nth);
      if (!fired) return;
      std::size_t bad_allocs = 0;
      for (const auto& r : reads) {
        CAPTURE(r.file);
        CAPTURE(r.offset);
        if (!failing(r)) {
          CHECK(r.error == nullptr);
          CHECK(std::equal(r.into.begin(), r.into.end(),
                           bytes.begin() + static_cast<std::ptrdiff_t>(r.offset)));
          continue;
        }
        REQUIRE(r.error != nullptr);  // a failed read never passes for a good one
        if (is_bad_alloc(r.error)) {
          ++bad_allocs;
        } else if (r.file == 7) {
          CHECK_THROWS_AS(std::rethrow_exception(r.error), std::out_of_range);
        } else {
          const auto error = record_error(r.error);
          CHECK(error.file() == files[r.file].path);
        }
      }
      // The failure hit one failed read's error (or nothing, once nth is past them all).
      CHECK(bad_allocs == (*fired ? 1 : 0));
      if (!*fired) break;
      ++failures;
    }
    CHECK(failures > 0);  // the errors' messages allocate: each allocation of them failed once
  }
}

namespace {
// Each allocation of `Reader`'s one thread failing in turn while it builds the errors of reads
// that fail: the end of the file, an OS error (EISDIR), an offset past off_t. Every read that
// fails with std::bad_alloc must still name its file in its what().
template <class Reader>
void check_out_of_memory_names_the_file() {
  if (!swp::test::allocation_failures_injectable()) {
    MESSAGE("skipped: allocation failures are injected only where operator new is replaced");
    return;
  }
  swp::test::TempDir dir;
  const auto path = write_file(dir, "f", random_bytes(4096, 12));
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const Fd dir_fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::vector<ReaderFile> files{{path, fd.fd}, {dir.path(), dir_fd.fd}};
  std::size_t named = 0;
  for (std::size_t nth = 1;; ++nth) {
    CAPTURE(nth);
    REQUIRE(nth < 1000);
    std::vector<ArmedRead> reads{{0, 4000, std::vector<std::byte>(200), {}},
                                 {1, 4096, std::vector<std::byte>(64), {}},
                                 {0, std::uint64_t{1} << 63, std::vector<std::byte>(8), {}}};
    const auto fired = read_armed<Reader>(files, reads, nth);
    if (!fired) return;
    if (!*fired) break;
    for (const auto& r : reads) {
      CAPTURE(r.file);
      CAPTURE(r.offset);
      REQUIRE(r.error != nullptr);
      if (!is_bad_alloc(r.error)) {
        CHECK(record_error(r.error).file() == files[r.file].path);
        continue;
      }
      // Still a std::bad_alloc (what it is), whose what() names the file as the RecordError
      // it stands for would have: the loader's user is told which file failed.
      try {
        std::rethrow_exception(r.error);
      } catch (const std::bad_alloc& e) {
        CHECK(std::string(e.what()) ==
              files[r.file].path.string() +
                  ": a read failed, and there was no memory left to say how (std::bad_alloc)");
      }
      ++named;
    }
  }
  CHECK(named > 0);  // the errors' messages allocate: each allocation of them failed once
}
}  // namespace

TEST_CASE("an io_uring read that fails with no memory to describe it still names its file") {
  check_out_of_memory_names_the_file<UseUring>();
}

TEST_CASE("a pread read that fails with no memory to describe it still names its file") {
  check_out_of_memory_names_the_file<UsePread>();
}

}  // namespace test_file_reader
