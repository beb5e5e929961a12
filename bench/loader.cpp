#include "loader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "metric.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/loader.hpp"

namespace swp_bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The baseline: each file read front to back with read(2) into one 1 MiB buffer, one thread —
// what `cat` does, the page cache's copy speed.
double raw_read_seconds(const std::vector<std::filesystem::path>& files) {
  std::vector<char> buffer(std::size_t{1} << 20);
  const auto start = Clock::now();
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + f.string());
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
  return seconds_since(start);
}

struct EpochResult {
  double seconds = 0;
  double stall_us_per_batch = 0;
};

// One epoch through a fast consumer (it only takes the batches).
EpochResult loader_epoch(swp::io::Loader& loader) {
  const auto before = loader.stats();
  const auto start = Clock::now();
  std::uint64_t records = 0;
  while (auto batch = loader.take()) records += batch->size();
  EpochResult r{.seconds = seconds_since(start), .stall_us_per_batch = 0};
  const auto after = loader.stats();
  if (records != loader.records_per_epoch()) throw std::runtime_error("loader lost records");
  const auto batches = after.batches - before.batches;
  r.stall_us_per_batch =
      std::chrono::duration<double, std::micro>(after.stall - before.stall).count() /
      static_cast<double>(batches);
  return r;
}

}  // namespace

void run_loader(const LoaderBenchOptions& o) {
  std::filesystem::path dir = o.dir;
  const bool temporary = dir.empty();
  if (temporary)
    dir =
        std::filesystem::temp_directory_path() / ("swp-bench-loader-" + std::to_string(::getpid()));
  if (temporary || !std::filesystem::exists(dir))
    swp::io::generate_dataset(dir, {.records = o.records, .bytes = o.bytes, .files = o.files});
  const auto files = swp::io::list_dataset(dir);
  const auto make = [&](bool shuffle, swp::io::ReaderKind reader) {
    return swp::io::Loader(files, {.name = "bench",
                                   .batch_records = o.batch_records,
                                   .shuffle = shuffle,
                                   .seed = 1,
                                   .prefetch_batches = o.prefetch,
                                   .reader = reader,
                                   .read_threads = o.read_threads});
  };
  auto plain = make(false, swp::io::ReaderKind::automatic);
  auto shuffled = make(true, swp::io::ReaderKind::automatic);
  auto pread = make(false, swp::io::ReaderKind::pread);
  const double mb = static_cast<double>(plain.dataset_bytes()) / 1e6;
  std::printf("# dataset %s: %llu records of %llu bytes, %zu files (%.0f MB); reader %s\n",
              dir.c_str(), static_cast<unsigned long long>(plain.dataset_records()),
              static_cast<unsigned long long>(o.bytes), files.size(), mb,
              swp::io::to_string(plain.reader()));
  // Warm-up: everything in the page cache, every loader's buffers allocated.
  (void)raw_read_seconds(files);
  for (auto* l : {&plain, &shuffled, &pread}) (void)loader_epoch(*l);

  std::vector<double> raw, loaded, loaded_shuffled, loaded_pread, stall, stall_shuffled,
      stall_pread;
  for (int round = 0; round < o.rounds; ++round) {
    raw.push_back(mb / raw_read_seconds(files));
    auto r = loader_epoch(plain);
    loaded.push_back(mb / r.seconds);
    stall.push_back(r.stall_us_per_batch);
    r = loader_epoch(shuffled);
    loaded_shuffled.push_back(mb / r.seconds);
    stall_shuffled.push_back(r.stall_us_per_batch);
    r = loader_epoch(pread);
    loaded_pread.push_back(mb / r.seconds);
    stall_pread.push_back(r.stall_us_per_batch);
  }
  const double raw_mb = median(raw);
  metric("raw_read_mb_per_s", raw_mb, "MB/s");
  metric("loader_mb_per_s", median(loaded), "MB/s");
  metric("loader_over_raw", median(loaded) / raw_mb, "ratio");
  metric("stall_us_per_batch", median(stall), "us");
  metric("loader_shuffled_mb_per_s", median(loaded_shuffled), "MB/s");
  metric("loader_shuffled_over_raw", median(loaded_shuffled) / raw_mb, "ratio");
  metric("stall_us_per_batch_shuffled", median(stall_shuffled), "us");
  metric("loader_pread_mb_per_s", median(loaded_pread), "MB/s");
  metric("loader_pread_over_raw", median(loaded_pread) / raw_mb, "ratio");
  metric("stall_us_per_batch_pread", median(stall_pread), "us");
  if (temporary) std::filesystem::remove_all(dir);
}

}  // namespace swp_bench
