// The loader standalone: every record once per epoch, in order or in a seeded shuffle, rank
// shares, bounded prefetch under a slow consumer, stall measurement. Both readers.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/fake_backend.hpp"
#include "support/loader_rig.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/io/detail/teardown_threads.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/read_order.hpp"

namespace test_loader {  // each test file's names apart (unity builds)

namespace {

using swp::test::Dataset;
using swp::test::UsePread;
using swp::test::UseUring;

std::vector<std::uint64_t> iota(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// One epoch through take(): the records' global numbers in order, checking each batch.
std::vector<std::uint64_t> epoch_ids(const Dataset& data, swp::io::Loader& loader,
                                     std::vector<swp::io::RecordRef>* refs = nullptr) {
  std::vector<std::uint64_t> ids;
  std::uint64_t number = 0;
  const std::uint64_t epoch = loader.epoch();
  while (auto batch = loader.take()) {
    CHECK(batch->number() == number++);
    CHECK(batch->epoch() == epoch);
    CHECK(batch->size() <= loader.options().batch_records);
    for (auto id : swp::test::checked_ids(data, *batch)) ids.push_back(id);
    if (refs != nullptr) refs->insert(refs->end(), batch->refs().begin(), batch->refs().end());
  }
  CHECK(number == loader.batches_per_epoch());
  return ids;
}

swp::Co<std::vector<std::uint64_t>> co_epoch(const Dataset& data, swp::io::Loader loader) {
  std::vector<std::uint64_t> ids;
  while (auto batch = co_await loader.next())
    for (auto id : swp::test::checked_ids(data, *batch)) ids.push_back(id);
  co_return ids;
}

}  // namespace

TEST_CASE_TEMPLATE("a loader hands out every record once per epoch, in dataset order", Reader,
                   UseUring, UsePread) {
  const Dataset data({.records = 103, .bytes = 100, .files = 4, .seed = 5});
  auto loader = swp::test::open_loader<Reader>(data.files, {.batch_records = 10});
  if (!loader) return;
  CHECK(loader->reader() == Reader::kind);
  CHECK(loader->batches_per_epoch() == 11);
  CHECK(loader->dataset_records() == 103);
  SUBCASE("take") {
    {
      const auto first = loader->take();
      REQUIRE(first);
      // Collated into a 4 KiB-aligned buffer (page-locked only with the CUDA backend and a GPU).
      CHECK(reinterpret_cast<std::uintptr_t>(first->bytes().data()) % 4096 == 0);
      CHECK(first->bytes().size() == 10 * swp::io::frame_bytes(100));
      if (!SWP_HAVE_CUDA) CHECK_FALSE(first->pinned());
      loader->restart(0);
    }
    CHECK(epoch_ids(data, *loader) == iota(103));
    CHECK(loader->epoch() == 1);  // the call after the end starts the next epoch
    CHECK(epoch_ids(data, *loader) == iota(103));
  }
  SUBCASE("co_await next()") {
    CHECK(swp::sync_wait(co_epoch(data, *loader)) == iota(103));
    CHECK(swp::sync_wait(co_epoch(data, *loader)) == iota(103));
  }
  const auto stats = loader->stats();
  CHECK(stats.batches >= 22);
  CHECK(stats.records >= 206);
  CHECK(stats.payload_bytes == stats.records * 100);
  // Unshuffled batches are one read each, two where a batch spans two files.
  CHECK(stats.reads <= 2 * 22);
}

TEST_CASE_TEMPLATE("one reader thread (checksums on the decode pool) reads the same records",
                   Reader, UseUring, UsePread) {
  const Dataset data({.records = 57, .bytes = 300, .files = 3, .seed = 6});
  for (const bool shuffle : {false, true}) {
    std::vector<std::vector<std::uint64_t>> epochs;
    for (const std::size_t threads : {std::size_t{1}, std::size_t{3}}) {
      auto loader = swp::test::open_loader<Reader>(
          data.files, {.batch_records = 5, .shuffle = shuffle, .seed = 1, .read_threads = threads});
      if (!loader) return;
      epochs.push_back(epoch_ids(data, *loader));
    }
    CHECK(epochs[0] == epochs[1]);
  }
}

TEST_CASE_TEMPLATE("more reads at once than an io_uring ring holds all complete, in order", Reader,
                   UseUring, UsePread) {
  // Shuffled records coalesce rarely: about one read each, 4 batches of 200 ahead on one
  // reader thread — far more than a ring's 63 reads in flight, so most wait their turn.
  const Dataset data({.records = 1000, .bytes = 64, .files = 2, .seed = 8});
  const swp::io::LoaderOptions options{
      .batch_records = 200, .shuffle = true, .seed = 3, .prefetch_batches = 4, .read_threads = 1};
  auto loader = swp::test::open_loader<Reader>(data.files, options);
  if (!loader) return;
  std::vector<swp::io::RecordRef> refs;
  auto ids = epoch_ids(data, *loader, &refs);
  CHECK(loader->stats().reads > 500);
  const std::vector<std::uint64_t> counts{500, 500};
  CHECK(refs == swp::io::epoch_order(counts, {.shuffle = true, .seed = 3}, 0));
  std::ranges::sort(ids);
  CHECK(ids == iota(1000));
}

TEST_CASE("batch buffers are page-locked where a registered backend gives such memory") {
  // libswp links no GPU runtime: the loader asks the backends registered in the process
  // (libswp-cuda's, or this fake) for page-locked memory, and uses plain memory otherwise.
  static swp::test::FakeBackend fake{.name = "test-loader-pinned"};
  (void)swp::test::register_fake_backend(fake);
  const Dataset data({.records = 20, .bytes = 100, .files = 1, .seed = 4});
  fake.pinned_on = true;
  const int calls = fake.pinned_calls;
  std::optional<swp::io::Batch> pinned;
  std::optional<swp::io::Batch> plain;
  {
    swp::io::Loader with(data.files, {.batch_records = 10, .reader = swp::io::ReaderKind::pread});
    swp::io::Loader without(
        data.files, {.batch_records = 10, .reader = swp::io::ReaderKind::pread, .pinned = false});
    pinned = with.take();
    plain = without.take();
  }
  fake.pinned_on = false;
  REQUIRE(pinned);
  REQUIRE(plain);
  CHECK(pinned->pinned());
  CHECK_FALSE(plain->pinned());
  CHECK(reinterpret_cast<std::uintptr_t>(pinned->bytes().data()) % 4096 == 0);
  // The cuda backend, registered first, gives it where a GPU is; the fake otherwise.
  if (!swp::test::cuda_gives_pinned_memory()) CHECK(fake.pinned_calls > calls);
}

TEST_CASE("the automatic reader is io_uring where it works, pread otherwise") {
  const Dataset data({.records = 4, .bytes = 16, .files = 1, .seed = 1});
  const swp::io::Loader loader(data.files, {});
  CHECK(loader.reader() != swp::io::ReaderKind::automatic);
  if (!SWP_HAVE_IO_URING) CHECK(loader.reader() == swp::io::ReaderKind::pread);
}

TEST_CASE_TEMPLATE("drop_last leaves out a short last batch", Reader, UseUring, UsePread) {
  const Dataset data({.records = 103, .bytes = 64, .files = 2, .seed = 5});
  auto loader =
      swp::test::open_loader<Reader>(data.files, {.batch_records = 10, .drop_last = true});
  if (!loader) return;
  CHECK(loader->batches_per_epoch() == 10);
  CHECK(epoch_ids(data, *loader) == iota(100));
}

TEST_CASE_TEMPLATE("a seeded shuffle repeats by seed, changes by epoch, covers every record once",
                   Reader, UseUring, UsePread) {
  const Dataset data({.records = 97, .bytes = 64, .files = 3, .seed = 2});
  const swp::io::LoaderOptions options{.batch_records = 8, .shuffle = true, .seed = 11};
  auto a = swp::test::open_loader<Reader>(data.files, options);
  auto b = swp::test::open_loader<Reader>(data.files, options);
  if (!a || !b) return;
  std::vector<swp::io::RecordRef> refs_a0, refs_a1, refs_b0;
  const auto a0 = epoch_ids(data, *a, &refs_a0);
  const auto a1 = epoch_ids(data, *a, &refs_a1);
  const auto b0 = epoch_ids(data, *b, &refs_b0);
  CHECK(a0 == b0);
  CHECK(a0 != a1);
  CHECK(a0 != iota(97));
  const std::vector<std::uint64_t> counts{33, 32, 32};
  CHECK(refs_a0 == swp::io::epoch_order(counts, {.shuffle = true, .seed = 11}, 0));
  CHECK(refs_a1 == swp::io::epoch_order(counts, {.shuffle = true, .seed = 11}, 1));
  for (auto ids : {a0, a1}) {
    std::ranges::sort(ids);
    CHECK(ids == iota(97));  // each record exactly once
  }
}

TEST_CASE_TEMPLATE("ranks read disjoint shares that together are the dataset", Reader, UseUring,
                   UsePread) {
  const Dataset data({.records = 50, .bytes = 32, .files = 3, .seed = 4});
  for (const bool shuffle : {false, true}) {
    std::set<std::uint64_t> seen;
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      auto loader = swp::test::open_loader<Reader>(
          data.files,
          {.batch_records = 4, .shuffle = shuffle, .seed = 9, .rank = rank, .world = 3});
      if (!loader) return;
      for (auto id : epoch_ids(data, *loader)) CHECK(seen.insert(id).second);  // disjoint
    }
    CHECK(seen.size() == 50);  // complete
  }
}

TEST_CASE_TEMPLATE("a slow consumer holds the loader at its prefetch bound", Reader, UseUring,
                   UsePread) {
  const Dataset data({.records = 64, .bytes = 4096, .files = 2, .seed = 1});
  const std::uint64_t batch_bytes = 4 * swp::io::frame_bytes(4096);
  SUBCASE("batches") {
    auto loader =
        swp::test::open_loader<Reader>(data.files, {.batch_records = 4, .prefetch_batches = 3});
    if (!loader) return;
    auto held = loader->take();  // starts the reads; the consumer then sleeps on it
    swp::test::wait_until([&] {
      const auto s = loader->stats();
      return s.prefetched_batches == 3 && s.reads_in_flight == 0;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room to overrun, if it would
    auto s = loader->stats();
    CHECK(s.prefetched_batches == 3);
    CHECK(s.peak_prefetched_batches == 3);
    CHECK(s.buffers_allocated <= 4);  // 3 ahead + the one held
    held.reset();
    // A whole epoch: buffers are reused, memory stays at the bound.
    while (auto batch = loader->take()) CHECK(loader->stats().prefetched_batches <= 3);
    s = loader->stats();
    CHECK(s.peak_prefetched_batches == 3);
    CHECK(s.buffers_allocated <= 4);
    CHECK(s.peak_prefetched_bytes <= 3 * batch_bytes);
  }
  SUBCASE("bytes") {
    auto loader = swp::test::open_loader<Reader>(
        data.files,
        {.batch_records = 4, .prefetch_batches = 8, .prefetch_bytes = batch_bytes * 5 / 2});
    if (!loader) return;
    while (auto batch = loader->take()) {
      const auto s = loader->stats();
      CHECK(s.prefetched_bytes <= batch_bytes * 5 / 2);
    }
    const auto s = loader->stats();
    CHECK(s.peak_prefetched_batches == 2);
    CHECK(s.peak_prefetched_bytes == 2 * batch_bytes);
    CHECK(s.buffers_allocated <= 3);
  }
}

TEST_CASE_TEMPLATE("a consumer faster than the loader has its stall time measured", Reader,
                   UseUring, UsePread) {
  const Dataset data({.records = 8, .bytes = 64, .files = 1, .seed = 1});
  // Decoding batch 0 takes at least 5 ms, and the first call cannot have found it ready.
  auto loader = swp::test::open_loader<Reader>(
      data.files, {.batch_records = 4, .decode = [](swp::io::Batch& b) {
                     if (b.number() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                   }});
  if (!loader) return;
  while (auto batch = loader->take()) {
  }
  const auto s = loader->stats();
  CHECK(s.stalls >= 1);
  CHECK(s.stall >= std::chrono::milliseconds(5));
  CHECK(s.stall_us_per_batch() >= 5000.0 / 2);
}

TEST_CASE_TEMPLATE("a batch of more records than the epoch holds is the whole epoch, SIZE_MAX too",
                   Reader, UseUring, UsePread) {
  const Dataset data({.records = 10, .bytes = 64, .files = 2, .seed = 1});
  for (const std::size_t batch : {std::size_t{10}, std::size_t{11}, SIZE_MAX - 1, SIZE_MAX}) {
    CAPTURE(batch);
    for (const bool drop_last : {false, true}) {
      CAPTURE(drop_last);
      auto loader = swp::test::open_loader<Reader>(
          data.files, {.batch_records = batch, .drop_last = drop_last});
      if (!loader) return;
      // A short last batch dropped leaves nothing of an epoch shorter than one batch.
      const bool empty = drop_last && batch > 10;
      CHECK(loader->batches_per_epoch() == (empty ? 0 : 1));
      CHECK(loader->records_per_epoch() == (empty ? 0 : 10));
      if (!empty) {
        const auto all = loader->take();
        REQUIRE(all);
        CHECK(all->size() == 10);
        CHECK(swp::test::checked_ids(data, *all).size() == 10);
      }
      CHECK_FALSE(loader->take());
    }
  }
}

namespace {

// Threads of this process now (the loader's read, ring and decode threads among them).
std::ptrdiff_t threads_now() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                       std::filesystem::directory_iterator());
}

// sync_wait(co) on a thread of its own; fails the test after 30 s instead of hanging it (the
// stuck thread is then left behind).
template <class T>
T sync_wait_within_deadline(swp::Co<T> co) {
  auto result = std::make_shared<std::promise<T>>();
  auto done = result->get_future();
  std::thread([result, co = std::move(co)]() mutable {
    try {
      result->set_value(swp::sync_wait(std::move(co)));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  REQUIRE_MESSAGE(done.wait_for(std::chrono::seconds(30)) == std::future_status::ready,
                  "sync_wait did not finish within 30 s");
  return done.get();
}

// A coroutine that owns its loader: after the first next() suspends, it runs on the loader's
// threads (no Resumer under sync_wait), and drops the loader there when it returns.
swp::Co<std::uint64_t> own_and_drop(const Dataset& data, swp::io::LoaderOptions options,
                                    std::uint64_t calls) {
  swp::io::Loader mine(data.files, std::move(options));
  std::uint64_t records = 0;
  for (std::uint64_t i = 0; i < calls; ++i)
    if (auto batch = co_await mine.next()) records += swp::test::checked_ids(data, *batch).size();
  co_return records;
}

// restart(3) after the first batch, then epoch 3 whole: on whichever thread the coroutine
// continues after its first next() (a thread of the loader's, when it suspended).
swp::Co<std::vector<std::uint64_t>> restart_inside(const Dataset& data, swp::io::Loader& loader) {
  (void)co_await loader.next();
  loader.restart(3);
  CHECK(loader.epoch() == 3);
  std::vector<std::uint64_t> ids;
  while (auto batch = co_await loader.next()) {
    CHECK(batch->epoch() == 3);
    for (auto id : swp::test::checked_ids(data, *batch)) ids.push_back(id);
  }
  co_return ids;
}

}  // namespace

TEST_CASE_TEMPLATE("a coroutine that owns its loader can drop it on the thread that resumed it",
                   Reader, UseUring, UsePread) {
  const Dataset data({.records = 200, .bytes = 64, .files = 2, .seed = 3});
  // One read thread: batches are verified and resumed on the decode thread; two: on the read
  // threads (pread) or the rings' threads (io_uring).
  for (const std::size_t read_threads : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(read_threads);
    const swp::io::LoaderOptions options{
        .batch_records = 8, .reader = Reader::kind, .read_threads = read_threads};
    if (!swp::test::open_loader<Reader>(data.files, options)) return;
    const auto before = threads_now();
    // next() calls: a partial epoch (reads in flight when it drops the loader), the whole
    // epoch of 25 batches and its end, and 4 batches into the next epoch.
    // A pair, not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    for (const auto& run : {std::pair<std::uint64_t, std::uint64_t>{2, 16}, {26, 200}, {30, 232}}) {
      const std::uint64_t calls = run.first;
      CAPTURE(calls);
      CHECK(sync_wait_within_deadline(own_and_drop(data, options, calls)) == run.second);
      // The loader ended (on a thread of its own) and joined every thread it had.
      swp::test::wait_until([&] { return threads_now() <= before; });
    }
  }
}

TEST_CASE("the threads loaders end on are joined before the process exits") {
  // What a loader dropped on its own thread ends on (TeardownThreads::process(), closed at
  // static destruction): close() returns only once every job it started has finished.
  swp::io::detail::TeardownThreads threads;
  threads.start([] {});  // finished long before close(): joined by the next start()
  swp::test::wait_until([&] { return threads.running() == 0; });
  std::atomic<bool> closing{false};
  std::atomic<bool> finished{false};
  threads.start([&] {
    while (!closing.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Still running once close() is called (without the join, close() returns meanwhile).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    finished = true;
  });
  CHECK(threads.running() == 1);
  closing = true;
  threads.close();
  CHECK(finished.load());
  CHECK(threads.running() == 0);
  // Closed (the process is exiting): a job is refused, not run past the join.
  CHECK_THROWS_WITH_AS(threads.start([] {}), doctest::Contains("closed"), std::logic_error);
}

TEST_CASE_TEMPLATE("restart() from a coroutine that awaits next() without a Resumer", Reader,
                   UseUring, UsePread) {
  const Dataset data({.records = 100, .bytes = 64, .files = 2, .seed = 3});
  for (const std::size_t read_threads : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(read_threads);
    auto loader = swp::test::open_loader<Reader>(
        data.files, {.batch_records = 8, .read_threads = read_threads});
    if (!loader) return;
    for (int run = 0; run < 20; ++run)  // the first next() of the epoch often suspends
      CHECK(sync_wait_within_deadline(restart_inside(data, *loader)) == iota(100));
    CHECK(loader->epoch() == 4);
    loader->restart(5);  // from this thread: drained and restarted here
    CHECK(epoch_ids(data, *loader) == iota(100));
  }
}

TEST_CASE("bad loader options are refused, naming the option") {
  const Dataset data({.records = 4, .bytes = 16, .files = 1, .seed = 1});
  CHECK_THROWS_WITH_AS(swp::io::Loader(data.files, {.batch_records = 0}),
                       doctest::Contains("batch_records"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::io::Loader(data.files, {.rank = 3, .world = 3}),
                       doctest::Contains("rank 3"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(swp::io::Loader(data.files, {.prefetch_batches = 0}),
                       doctest::Contains("prefetch_batches"), std::invalid_argument);
  CHECK_THROWS_AS(swp::io::Loader::open_dir(data.dir / "missing", {}), swp::io::RecordError);
}

}  // namespace test_loader
