// swp data gen|check: the data loader's record files — write a test dataset, verify one.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/progress_meter.hpp"
#include "swp/io/record_format.hpp"

namespace swp::cli {

namespace {

struct GenFlags {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t files = 4;
  std::uint64_t seed = 1;
  std::string out;
};

// The bytes `swp data gen` puts on disk: every file's header, frames and index, and the index
// spill of its largest file until that file is closed; nullopt past 2^64.
std::optional<std::uint64_t> dataset_bytes(const GenFlags& f) {
  const std::uint64_t per_record = io::frame_bytes(f.bytes) + io::index_entry_bytes;
  const std::uint64_t largest_file = f.records / f.files + (f.records % f.files != 0 ? 1 : 0);
  std::uint64_t records = 0, headers = 0, total = 0;
  if (__builtin_mul_overflow(f.records, per_record, &records) ||
      __builtin_mul_overflow(f.files, io::record_header_bytes, &headers) ||
      __builtin_add_overflow(records, headers, &total) ||
      __builtin_add_overflow(total, largest_file * io::index_entry_bytes, &total))
    return std::nullopt;
  return total;
}

// The room on the file system `dir` will be on (its nearest existing ancestor's), or nullopt
// when it cannot be told.
std::optional<std::uint64_t> available_bytes(std::filesystem::path dir) {
  std::error_code ec;
  dir = std::filesystem::absolute(dir, ec);
  if (ec) return std::nullopt;
  while (!std::filesystem::exists(dir, ec) && dir.has_relative_path()) dir = dir.parent_path();
  const auto space = std::filesystem::space(dir, ec);
  if (ec) return std::nullopt;
  return space.available;
}

// A dataset that cannot fit is refused before a byte is written: --records 10^12 would
// otherwise write until the disk is full (its memory stays flat: the writer spills the index).
// Returns the error, empty when it fits (or the room cannot be told).
std::string does_not_fit(const GenFlags& f) {
  if (f.files > f.records) return {};  // generate_dataset names that
  const auto needed = dataset_bytes(f);
  const auto available = available_bytes(f.out);
  const std::string what = "--records " + std::to_string(f.records) + " of --bytes " +
                           std::to_string(f.bytes) + " take ";
  if (!needed) return what + "more than 2^64 bytes on disk";
  if (available && *needed > *available)
    return what + std::to_string(*needed) + " bytes on disk (frames, index and headers); '" +
           f.out + "' is on a file system with " + std::to_string(*available) + " bytes available";
  return {};
}

int generate(const GenFlags& flags) {
  if (const auto why = does_not_fit(flags); !why.empty()) {
    print_error("swp data gen: " + why);
    return Exit::bad_usage;
  }
  io::ProgressMeter meter("gen", flags.records, flags.records * flags.bytes);
  try {
    const auto files = io::generate_dataset(
        flags.out,
        {.records = flags.records, .bytes = flags.bytes, .files = flags.files, .seed = flags.seed},
        [&](std::uint64_t n) { meter.update(n, n * flags.bytes); });
    meter.finish();
    std::printf("wrote %llu records of %llu bytes in %zu files to %s\n",
                static_cast<unsigned long long>(flags.records),
                static_cast<unsigned long long>(flags.bytes), files.size(), flags.out.c_str());
  } catch (const std::invalid_argument& e) {
    meter.finish();
    print_error(std::string("swp data gen: ") + e.what());
    return Exit::bad_usage;
  } catch (const std::exception& e) {
    meter.finish();
    print_error(std::string("swp data gen: ") + e.what());
    return Exit::invalid_plan;
  }
  return Exit::ok;
}

int check(const std::string& dir) {
  std::unique_ptr<io::ProgressMeter> meter;
  try {
    const auto summary = io::check_dataset(dir, [&](std::uint64_t done, std::uint64_t total) {
      if (!meter) meter = std::make_unique<io::ProgressMeter>("check", 0, total);
      meter->update(0, done);
    });
    if (meter) meter->finish();
    std::printf("ok: %llu files, %llu records, %llu bytes\n",
                static_cast<unsigned long long>(summary.files),
                static_cast<unsigned long long>(summary.records),
                static_cast<unsigned long long>(summary.bytes));
  } catch (const std::exception& e) {
    // RecordError names the first bad file and the offset; anything else (an unreadable
    // directory) is one error line too, after the progress line was ended.
    if (meter) meter->finish();
    print_error(e.what());
    return Exit::invalid_plan;
  }
  return Exit::ok;
}

}  // namespace

void add_data_command(CLI::App& app, Action& action) {
  auto* data = app.add_subcommand("data", "the data loader's record files: gen, check");
  data->require_subcommand(1);
  auto* gen = data->add_subcommand("gen", "write a test dataset of record files");
  auto flags = std::make_shared<GenFlags>();
  gen->add_option("--records", flags->records, "records in all")->required()->check(at_least(1));
  gen->add_option("--bytes", flags->bytes, "payload bytes per record (the format's u32 length)")
      ->required()
      ->check(in_range(8, std::numeric_limits<std::uint32_t>::max()));
  gen->add_option("--out", flags->out, "directory to write (created if missing)")->required();
  gen->add_option("--files", flags->files, "files to spread the records over")
      ->check(at_least(1))
      ->capture_default_str();
  gen->add_option("--seed", flags->seed, "seed of the payload contents")->capture_default_str();
  gen->callback([&action, flags] { action = [flags] { return generate(*flags); }; });
  auto* chk = data->add_subcommand("check", "verify every header, index and record checksum");
  auto dir = std::make_shared<std::string>();
  chk->add_option("DIR", *dir, "dataset directory")->required();
  chk->callback([&action, dir] { action = [dir] { return check(*dir); }; });
}

}  // namespace swp::cli
