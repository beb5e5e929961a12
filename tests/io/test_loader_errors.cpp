// Loader errors: a corrupt record, a file truncated under the loader, a read the reader cannot
// issue, a failing decode and a missing file — each named with file and offset, surfacing from
// the consumer's next call as LoaderError once the reads in flight drained, the batches before
// it still handed out. Both readers.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/alloc_counter.hpp"
#include "support/crafted_records.hpp"
#include "support/loader_rig.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/io/detail/file_reader.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/record_file.hpp"

namespace test_loader_errors {  // each test file's names apart (unity builds)

namespace {

using swp::test::Dataset;
using swp::test::UsePread;
using swp::test::UseUring;

// Takes batches until the loader throws; returns the batches taken and the error.
template <class Take>
std::pair<std::uint64_t, swp::io::LoaderError> batches_until_error(Take&& take) {
  std::uint64_t n = 0;
  try {
    while (take()) ++n;
  } catch (const swp::io::LoaderError& e) {
    return {n, e};
  }
  FAIL("the loader reported no error");
  return {n, swp::io::LoaderError("", nullptr)};
}

swp::io::RecordError cause(const swp::io::LoaderError& e) {
  try {
    std::rethrow_exception(e.nested());
  } catch (const swp::io::RecordError& r) {
    return r;
  } catch (...) {
  }
  FAIL("the cause is not a RecordError");
  return {{}, 0, ""};
}

// Passes reads to the real reader until `fail_at` were accepted; then read() throws
// std::bad_alloc, as a reader that cannot allocate its queue entry would.
class ThrowingReader final : public swp::io::detail::FileReader {
 public:
  ThrowingReader(std::unique_ptr<FileReader> real, std::size_t fail_at)
      : real_(std::move(real)), fail_at_(fail_at) {}
  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    if (reads_ == fail_at_) throw std::bad_alloc();  // the loader issues under its lock
    ++reads_;
    real_->read(file, offset, into, std::move(done));
  }
  [[nodiscard]] swp::io::ReaderKind kind() const noexcept override { return real_->kind(); }
  [[nodiscard]] bool completes_on_pool() const noexcept override {
    return real_->completes_on_pool();
  }

 private:
  std::unique_ptr<FileReader> real_;
  std::size_t fail_at_;
  std::size_t reads_ = 0;
};

// Every reader made in its scope is a ThrowingReader failing at read `fail_at`.
class ThrowingReads {
 public:
  explicit ThrowingReads(std::size_t fail_at) {
    swp::io::detail::set_reader_wrap([fail_at](std::unique_ptr<swp::io::detail::FileReader> r) {
      return std::make_unique<ThrowingReader>(std::move(r), fail_at);
    });
  }
  ThrowingReads(const ThrowingReads&) = delete;
  ThrowingReads& operator=(const ThrowingReads&) = delete;
  ~ThrowingReads() { swp::io::detail::set_reader_wrap({}); }
};

// What a fault-injection reader does to the reads the loader issues.
struct Faults {
  // Each completion of a read (see the reader) runs with its nth allocation failing (0: none).
  std::atomic<std::size_t> fail_nth{0};
  // Holds the first read until release_first(), and those after it until the first one's
  // completion (and the consumer's code it resumed inline) returned.
  bool hold = false;
  std::atomic<std::size_t> faulty{0};    // faulty completions: issued
  std::atomic<std::size_t> returned{0};  // ... and returned
  std::atomic<std::size_t> fired{0};     // ... whose allocation failed

  // Completions whose allocation failed, once every faulty completion issued returned (the
  // loader may hand out its batch before the completion that made it returns).
  std::size_t fired_once_returned() {
    swp::test::wait_until([&] { return returned.load() == faulty.load(); });
    return fired.load();
  }

  // With `hold`: issues the first read, held so far.
  void release_first() {
    std::function<void()> issue;
    {
      const std::lock_guard lock(mutex);
      issue = std::move(first);
    }
    REQUIRE(issue);
    issue();
  }

  std::mutex mutex;
  std::function<void()> first;  // issues the first read
};

// Passes reads to the real reader; their completions run with an allocation failing
// (FailNthAllocation), as where the heap is exhausted on a reader thread. With `hold`, only
// the reads held after the first are faulty.
class FaultyReader final : public swp::io::detail::FileReader {
 public:
  FaultyReader(std::unique_ptr<FileReader> real, std::shared_ptr<Faults> faults)
      : real_(std::move(real)), faults_(std::move(faults)) {}
  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> into, Done done) override {
    // Called under the loader's lock: reads_ needs no lock of its own.
    const std::size_t n = reads_++;
    if (!faults_->hold) {
      real_->read(file, offset, into, faulty(std::move(done)));
    } else if (n == 0) {
      const std::lock_guard lock(faults_->mutex);
      faults_->first = [this, file, offset, into, done = std::move(done)]() mutable {
        real_->read(file, offset, into, [this, done = std::move(done)](std::exception_ptr e) {
          done(std::move(e));
          release();
        });
      };
    } else {
      std::unique_lock lock(mutex_);
      if (!released_) {
        held_.push_back([this, file, offset, into, done = std::move(done)]() mutable {
          real_->read(file, offset, into, faulty(std::move(done)));
        });
        return;
      }
      lock.unlock();
      real_->read(file, offset, into, std::move(done));
    }
  }
  [[nodiscard]] swp::io::ReaderKind kind() const noexcept override { return real_->kind(); }
  [[nodiscard]] bool completes_on_pool() const noexcept override {
    return real_->completes_on_pool();
  }

 private:
  Done faulty(Done done) {
    ++faults_->faulty;
    return [faults = faults_, done = std::move(done)](std::exception_ptr e) {
      {
        const swp::test::FailNthAllocation fail(faults->fail_nth);
        done(std::move(e));
        if (fail.fired()) ++faults->fired;
      }
      ++faults->returned;
    };
  }
  void release() {
    std::vector<std::function<void()>> held;
    {
      const std::lock_guard lock(mutex_);
      released_ = true;
      held.swap(held_);
    }
    for (auto& issue : held) issue();
  }

  std::unique_ptr<FileReader> real_;
  std::shared_ptr<Faults> faults_;
  std::size_t reads_ = 0;
  std::mutex mutex_;
  bool released_ = false;
  std::vector<std::function<void()>> held_;
};

// Every reader made in its scope is a FaultyReader doing `faults`.
class FaultyReads {
 public:
  explicit FaultyReads(std::shared_ptr<Faults> faults) {
    swp::io::detail::set_reader_wrap(
        [faults = std::move(faults)](std::unique_ptr<swp::io::detail::FileReader> r) {
          return std::make_unique<FaultyReader>(std::move(r), faults);
        });
  }
  FaultyReads(const FaultyReads&) = delete;
  FaultyReads& operator=(const FaultyReads&) = delete;
  ~FaultyReads() { swp::io::detail::set_reader_wrap({}); }
};

std::vector<std::uint64_t> iota(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// One epoch through take() on a thread of its own (the loader shared with it), within 30 s:
// the records' global numbers in order, or the loader's error.
std::pair<std::vector<std::uint64_t>, std::optional<swp::io::LoaderError>> epoch_within_deadline(
    const std::shared_ptr<swp::io::Loader>& loader) {
  using Result = std::pair<std::vector<std::uint64_t>, std::optional<swp::io::LoaderError>>;
  auto result = std::make_shared<std::promise<Result>>();
  auto done = result->get_future();
  std::thread([loader, result] {
    Result r;
    try {
      while (auto batch = loader->take())
        for (std::size_t i = 0; i < batch->size(); ++i)
          r.first.push_back(swp::io::generated_record_id(batch->record(i)));
      result->set_value(std::move(r));
    } catch (const swp::io::LoaderError& e) {
      r.second = e;
      result->set_value(std::move(r));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  REQUIRE_MESSAGE(done.wait_for(std::chrono::seconds(30)) == std::future_status::ready,
                  "take() did not return within 30 s");
  return done.get();
}

// The records' global numbers of the epoch restarted, or the loader's error.
using RestartResult = std::pair<std::vector<std::uint64_t>, std::optional<std::string>>;

// Takes a batch, restart(epoch) — on the loader's thread that resumed it (no Resumer), with a
// read in flight, so that read's completion finishes the restart — then awaits the epoch
// restarted.
swp::Co<void> restart_and_read(std::shared_ptr<swp::io::Loader> loader, std::uint64_t epoch,
                               std::shared_ptr<std::promise<RestartResult>> result) {
  RestartResult out;
  (void)co_await loader->next();
  loader->restart(epoch);
  try {
    while (auto batch = co_await loader->next())
      for (std::size_t i = 0; i < batch->size(); ++i)
        out.first.push_back(swp::io::generated_record_id(batch->record(i)));
  } catch (const swp::io::LoaderError& e) {
    out.second = e.what();
  }
  result->set_value(std::move(out));
}

void set_error(void* result, std::exception_ptr& error) noexcept {
  if (error) static_cast<std::promise<RestartResult>*>(result)->set_exception(error);
}

}  // namespace

TEST_CASE_TEMPLATE("a corrupt record fails the loader at its batch, naming file and offset", Reader,
                   UseUring, UsePread) {
  const Dataset data({.records = 40, .bytes = 256, .files = 2, .seed = 3});
  // Record 7 of file 1 is global record 27: batch 6 of batches of 4.
  const std::uint64_t at = swp::io::RecordFile(data.files[1]).entry(7).offset;
  swp::test::flip_byte(data.files[1], at + swp::io::frame_header_bytes + 100);
  auto loader = swp::test::open_loader<Reader>(
      data.files, {.name = "train-data", .batch_records = 4, .prefetch_batches = 3});
  if (!loader) return;
  for (int round = 0; round < 2; ++round) {
    auto [taken, error] = round == 0
                              ? batches_until_error([&] { return loader->take(); })
                              : batches_until_error([&] { return swp::sync_wait(loader->next()); });
    CHECK(taken == 6);  // every batch before the bad one
    CHECK(error.loader() == "train-data");
    const std::string what = error.what();
    CHECK(what.find("loader 'train-data'") != std::string::npos);
    CHECK(what.find(data.files[1].string() + " at offset " + std::to_string(at)) !=
          std::string::npos);
    const auto record = cause(error);
    CHECK(record.file() == data.files[1]);
    CHECK(record.offset() == at);
    CHECK(loader->stats().reads_in_flight == 0);  // drained before it surfaced
    // Every later call says it again, until restart().
    CHECK_THROWS_AS(loader->take(), swp::io::LoaderError);
    loader->restart(0);
  }
}

TEST_CASE_TEMPLATE("a file truncated under the loader is reported where it ends", Reader, UseUring,
                   UsePread) {
  const Dataset data({.records = 30, .bytes = 512, .files = 3, .seed = 3});
  auto loader = swp::test::open_loader<Reader>(data.files, {.batch_records = 5});
  if (!loader) return;
  // After the loader validated the file: file 2 (global 20..29) loses its last 3 records.
  const std::uint64_t cut = swp::io::RecordFile(data.files[2]).entry(7).offset + 40;
  std::filesystem::resize_file(data.files[2], cut);
  auto [taken, error] = batches_until_error([&] { return loader->take(); });
  CHECK(taken == 5);  // global records 25..29 are batch 5
  const auto record = cause(error);
  CHECK(record.file() == data.files[2]);
  CHECK(record.offset() == cut);
  CHECK(std::string(record.what()).find("truncated") != std::string::npos);
  CHECK(loader->stats().reads_in_flight == 0);
}

TEST_CASE_TEMPLATE("a decode that throws fails the loader like a corrupt record", Reader, UseUring,
                   UsePread) {
  const Dataset data({.records = 40, .bytes = 64, .files = 1, .seed = 3});
  auto loader = swp::test::open_loader<Reader>(
      data.files, {.name = "aug", .batch_records = 4, .decode = [](swp::io::Batch& b) {
                     if (b.number() == 3) throw std::runtime_error("cannot decode batch 3");
                   }});
  if (!loader) return;
  auto [taken, error] = batches_until_error([&] { return loader->take(); });
  CHECK(taken == 3);
  CHECK(std::string(error.what()) == "loader 'aug' failed: cannot decode batch 3");
}

TEST_CASE_TEMPLATE("a missing or damaged file is refused when the loader opens", Reader, UseUring,
                   UsePread) {
  const Dataset data({.records = 10, .bytes = 64, .files = 2, .seed = 3});
  auto files = data.files;
  files.push_back(data.dir / "part-00009.swprec");
  CHECK_THROWS_WITH_AS(swp::test::open_loader<Reader>(files, {}),
                       doctest::Contains("part-00009.swprec at offset 0: cannot open"),
                       swp::io::RecordError);
  std::filesystem::resize_file(data.files[1], 100);
  CHECK_THROWS_WITH_AS(swp::test::open_loader<Reader>(data.files, {}),
                       doctest::Contains("part-00001.swprec at offset 100: truncated"),
                       swp::io::RecordError);
}

TEST_CASE_TEMPLATE("a loader refuses every crafted file as RecordFile does, without hanging",
                   Reader, UseUring, UsePread) {
  namespace crafted = swp::test::crafted;
  if (!swp::test::open_loader<Reader>(Dataset({.records = 1, .bytes = 8, .files = 1}).files, {}))
    return;  // io_uring is not usable here (said why)
  for (const crafted::Case& c : crafted::cases()) {
    INFO(c.name);
    swp::test::TempDir dir;
    const auto path = dir / "x.swprec";
    c.make(path);
    // What RecordFile says (test_record_file.cpp checks it against the case).
    const auto expected =
        crafted::record_error_within_deadline(path, [&] { swp::io::RecordFile(path).verify(); });
    bool opened = false;
    const auto error = crafted::record_error_within_deadline(path, [&] {
      auto loader = swp::io::Loader::open_dir(
          dir.path(), {.name = "crafted", .batch_records = 2, .reader = Reader::kind});
      opened = true;
      try {
        while (loader.take()) {
        }
      } catch (const swp::io::LoaderError& e) {
        CHECK(e.loader() == "crafted");
        std::rethrow_exception(e.nested());
      }
    });
    if (!error || !expected) continue;
    CHECK(opened == (c.seen == crafted::Seen::at_read));
    CHECK(error->file() == path);
    CHECK(error->offset() == c.offset);
    CHECK(std::string(error->what()) == expected->what());
  }
}

TEST_CASE_TEMPLATE("a read the reader refuses to issue fails the loader, naming file and offset",
                   Reader, UseUring, UsePread) {
  const Dataset data({.records = 40, .bytes = 64, .files = 2, .seed = 3});
  // Unshuffled batches of 4 in files of 20 records are one read each: read 6 is batch 6,
  // records 4..7 of file 1.
  const std::uint64_t at = swp::io::RecordFile(data.files[1]).entry(4).offset;
  std::optional<swp::io::Loader> opened;
  {
    const ThrowingReads throwing(6);
    opened = swp::test::open_loader<Reader>(
        data.files, {.name = "refused", .batch_records = 4, .prefetch_batches = 3});
  }
  if (!opened) return;
  // The loader shared with the thread that takes: were that thread left waiting for a read
  // never issued, it would keep the loader (which could not be destroyed) and the test fail.
  auto loader = std::make_shared<swp::io::Loader>(std::move(*opened));
  opened.reset();
  auto result = std::make_shared<std::promise<std::pair<std::uint64_t, swp::io::LoaderError>>>();
  auto done = result->get_future();
  std::thread([loader, result] {
    std::uint64_t n = 0;
    try {
      while (loader->take()) ++n;
      result->set_value({n, swp::io::LoaderError("", nullptr)});
    } catch (const swp::io::LoaderError& e) {
      result->set_value({n, e});
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  REQUIRE_MESSAGE(done.wait_for(std::chrono::seconds(30)) == std::future_status::ready,
                  "take() did not return within 30 s");
  const auto [taken, error] = done.get();
  CHECK(taken == 6);  // every batch before the refused read
  CHECK(error.loader() == "refused");
  REQUIRE(error.nested() != nullptr);
  const auto record = cause(error);
  CHECK(record.file() == data.files[1]);
  CHECK(record.offset() == at);
  CHECK(std::string(record.what()).find("std::bad_alloc") != std::string::npos);
  CHECK(loader->stats().reads_in_flight == 0);
  CHECK_THROWS_AS(loader->take(), swp::io::LoaderError);  // until restart()
}

TEST_CASE_TEMPLATE(
    "an allocation failing where a read completes a restart fails the loader, never the process",
    Reader, UseUring, UsePread) {
  if (!swp::test::allocation_failures_injectable()) {
    MESSAGE("skipped: allocation failures are injected only where operator new is replaced");
    return;
  }
  const Dataset data({.records = 24, .bytes = 64, .files = 2, .seed = 3});
  // The read the restart waits for completes on a reader thread, which (two read threads:
  // checksums verified there) finishes the restart and, the consumer waiting, starts epoch 2's
  // reads: each of its allocations in turn fails, until one run made fewer.
  std::size_t errors = 0;
  for (std::size_t nth = 1;; ++nth) {
    CAPTURE(nth);
    REQUIRE(nth < 1000);
    auto faults = std::make_shared<Faults>();
    faults->fail_nth = nth;
    faults->hold = true;
    std::optional<swp::io::Loader> opened;
    {
      const FaultyReads faulty(faults);
      opened = swp::test::open_loader<Reader>(
          data.files,
          {.name = "oom", .batch_records = 4, .prefetch_batches = 1, .read_threads = 2});
    }
    if (!opened) return;
    auto loader = std::make_shared<swp::io::Loader>(std::move(*opened));
    auto result = std::make_shared<std::promise<RestartResult>>();
    auto done = result->get_future();
    restart_and_read(loader, 2, result).start_detached(nullptr, &set_error, result.get());
    // It waits in its first next() (the read held): the read's completion resumes it.
    faults->release_first();
    REQUIRE_MESSAGE(done.wait_for(std::chrono::seconds(30)) == std::future_status::ready,
                    "the coroutine did not finish within 30 s");
    const auto [ids, error] = done.get();
    if (error) {
      // The batches before the failure, then the error naming the loader and the cause.
      ++errors;
      CHECK(ids == iota(ids.size()));  // the batches before it, in order
      CHECK(error->find("loader 'oom' failed: ") == 0);
      CHECK(error->find("std::bad_alloc") != std::string::npos);
    } else {
      CHECK(ids == iota(24));  // epoch 2 is unshuffled: every record, in order
    }
    CHECK(loader->stats().reads_in_flight == 0);
    // The loader is usable again after restart().
    loader->restart(0);
    const auto again = epoch_within_deadline(loader);
    CHECK_FALSE(again.second);
    CHECK(again.first == iota(24));
    if (faults->fired_once_returned() == 0) break;  // every allocation there failed once
  }
  CHECK(errors > 0);  // some allocation failures could only fail the loader
}

TEST_CASE_TEMPLATE("an allocation failing where a read completes loses no batch", Reader, UseUring,
                   UsePread) {
  if (!swp::test::allocation_failures_injectable()) {
    MESSAGE("skipped: allocation failures are injected only where operator new is replaced");
    return;
  }
  const Dataset data({.records = 80, .bytes = 64, .files = 2, .seed = 3});
  // One read thread: each read's completion passes its batch to the decode pool, the queue of
  // which allocates now and then; each completion's nth allocation fails.
  std::size_t fired = 0;
  for (std::size_t nth = 1;; ++nth) {
    CAPTURE(nth);
    REQUIRE(nth < 1000);
    auto faults = std::make_shared<Faults>();
    faults->fail_nth = nth;
    std::optional<swp::io::Loader> loader;
    {
      const FaultyReads faulty(faults);
      loader = swp::test::open_loader<Reader>(
          data.files, {.name = "oom", .batch_records = 4, .read_threads = 1});
    }
    if (!loader) return;
    auto shared = std::make_shared<swp::io::Loader>(std::move(*loader));
    const auto [ids, error] = epoch_within_deadline(shared);
    if (error) {
      CHECK(std::string(error->what()).find("std::bad_alloc") != std::string::npos);
      CHECK(ids == iota(ids.size()));  // the batches before it, in order
      faults->fail_nth = 0;
      shared->restart(0);
      const auto again = epoch_within_deadline(shared);
      CHECK_FALSE(again.second);
      CHECK(again.first == iota(80));
    } else {
      CHECK(ids == iota(80));
    }
    const std::size_t fired_now = faults->fired_once_returned();
    fired += fired_now;
    if (fired_now == 0) break;
  }
  CHECK(fired > 0);  // a completion's allocation did fail
}

}  // namespace test_loader_errors
