#pragma once
// Helpers of the loader tests: both readers as test types, a generated dataset, global record
// numbers, waits with deadlines.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"
#include "swp/config.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/record_file.hpp"

namespace swp::test {

struct UseUring {
  static constexpr const char* name = "uring";
  static constexpr io::ReaderKind kind = io::ReaderKind::uring;
};
struct UsePread {
  static constexpr const char* name = "pread";
  static constexpr io::ReaderKind kind = io::ReaderKind::pread;
};

/// A loader with `Reader`'s reader, or empty (the test then skips, saying why) where io_uring
/// is not compiled in or the kernel refuses it.
template <class Reader>
std::optional<io::Loader> open_loader(const std::vector<std::filesystem::path>& files,
                                      io::LoaderOptions options) {
  options.reader = Reader::kind;
  try {
    return io::Loader(files, std::move(options));
  } catch (const std::runtime_error& e) {
    if (Reader::kind == io::ReaderKind::uring &&
        std::string(e.what()).find("ReaderKind::uring") != std::string::npos) {
      MESSAGE("skipped: " << e.what());
      return std::nullopt;
    }
    throw;
  }
}

/// A generated dataset in a temporary directory.
struct Dataset {
  TempDir dir;
  std::vector<std::filesystem::path> files;
  std::vector<std::uint64_t> first;  // global number of each file's first record

  explicit Dataset(io::GenerateOptions options) {
    files = io::generate_dataset(dir.path(), options);
    std::uint64_t g = 0;
    for (const auto& f : files) {
      first.push_back(g);
      g += io::RecordFile(f).size();
    }
  }
  [[nodiscard]] std::uint64_t global(io::RecordRef r) const { return first.at(r.file) + r.record; }
};

/// Every record of `batch` carries the generated payload of the record its ref names.
inline std::vector<std::uint64_t> checked_ids(const Dataset& data, const io::Batch& batch) {
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::uint64_t id = io::generated_record_id(batch.record(i));
    CHECK(id == data.global(batch.ref(i)));
    ids.push_back(id);
  }
  return ids;
}

/// Polls `done` until it holds; fails the test after 30 s instead of hanging.
inline void wait_until(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "waited 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace swp::test
