#include "swp/io/dataset.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include "swp/io/io_errors.hpp"
#include "swp/io/record_file.hpp"
#include "swp/io/record_writer.hpp"

namespace swp::io {

namespace {
std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The message of the exception being handled.
std::string what_failed() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}
}  // namespace

std::vector<std::filesystem::path> list_dataset(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw RecordError(
        dir, 0, std::filesystem::exists(dir, ec) ? "not a directory" : "no such dataset directory");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == record_file_extension) files.push_back(entry.path());
  if (files.empty())
    throw RecordError(dir, 0, std::string("no record files (*") + record_file_extension + ")");
  std::ranges::sort(files);
  return files;
}

std::string generated_file_name(std::uint64_t file, std::uint64_t files) {
  // Every number of the dataset as wide as the largest, so name order is number order.
  const int width =
      std::max(5, static_cast<int>(std::to_string(files == 0 ? 0 : files - 1).size()));
  char name[48];
  std::snprintf(name, sizeof name, "part-%0*llu%s", width, static_cast<unsigned long long>(file),
                record_file_extension);
  return name;
}

std::vector<std::filesystem::path> generate_dataset(
    const std::filesystem::path& dir, const GenerateOptions& options,
    const std::function<void(std::uint64_t)>& on_progress) {
  if (options.records == 0) throw std::invalid_argument("--records must be at least 1");
  if (options.files == 0) throw std::invalid_argument("--files must be at least 1");
  if (options.bytes < 8) throw std::invalid_argument("--bytes must be at least 8");
  if (options.files > options.records)
    throw std::invalid_argument("--files (" + std::to_string(options.files) +
                                ") must not exceed --records (" + std::to_string(options.records) +
                                ")");
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> files;
  std::vector<std::uint64_t> words((options.bytes + 7) / 8);
  std::uint64_t g = 0;
  for (std::uint64_t f = 0; f < options.files; ++f) {
    files.push_back(dir / generated_file_name(f, options.files));
    // Runs as even as they can be: the first (records % files) files get one more.
    const std::uint64_t count =
        options.records / options.files + (f < options.records % options.files ? 1 : 0);
    try {
      RecordWriter out(files.back());
      for (std::uint64_t i = 0; i < count; ++i, ++g) {
        std::uint64_t state = options.seed * 0x100000001b3ULL ^ g;
        words[0] = g;
        for (std::size_t w = 1; w < words.size(); ++w) words[w] = splitmix(state);
        out.append(std::as_bytes(std::span(words)).first(options.bytes));
        if (on_progress && g % 256 == 0) on_progress(g);
      }
      out.close();
    } catch (...) {
      // The writer died with the exception, leaving its file incomplete (refused when read):
      // say which file, keeping the cause.
      std::throw_with_nested(RecordError(
          files.back(), 0,
          "not finished (" + what_failed() + "): left incomplete, its header has no index"));
    }
  }
  if (on_progress) on_progress(g);
  return files;
}

std::uint64_t generated_record_id(std::span<const std::byte> payload) {
  std::uint64_t id = 0;
  if (payload.size() < sizeof id) throw std::invalid_argument("payload shorter than 8 bytes");
  std::memcpy(&id, payload.data(), sizeof id);
  return id;
}

CheckSummary check_dataset(const std::filesystem::path& dir,
                           const std::function<void(std::uint64_t, std::uint64_t)>& on_progress) {
  CheckSummary summary;
  const auto paths = list_dataset(dir);
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& path : paths) {
    // Only for the progress display: what is not a regular file is refused when opened.
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) total += size;
  }
  // File by file, so the error names the first bad file in dataset order.
  for (const auto& path : paths) {
    const RecordFile file(path);
    std::uint64_t done = summary.bytes;
    file.verify([&](std::uint64_t bytes) {
      done += bytes;
      if (on_progress) on_progress(done, total);
    });
    summary.files += 1;
    summary.records += file.size();
    summary.bytes += file.file_bytes();
  }
  return summary;
}

}  // namespace swp::io
