// swp data gen|check: the data loader's record files — write a test dataset, verify one.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "diagnostics.hpp"
#include "options.hpp"
#include "plan_input.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/progress_meter.hpp"

namespace swp::cli {

namespace {

struct GenFlags {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t files = 4;
  std::uint64_t seed = 1;
  std::string out;
};

int generate(const GenFlags& flags) {
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
  } catch (const io::RecordError& e) {
    if (meter) meter->finish();
    print_error(e.what());  // names the first bad file and the offset
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
  gen->add_option("--bytes", flags->bytes, "payload bytes per record")
      ->required()
      ->check(at_least(8));
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
