// libFuzzer target: the `swp` command line's argument handling, in-process (swp::cli::run_cli).
//
// Input: the arguments after `swp`, one per line (at most 16). They run in a scratch directory
// that holds the seed plans (tests/data/plans, tests/data/seed000) under their file names, so
// `validate three_stage.json` or `run sparse_dist.json --iters 5` reach the commands; standard
// input is /dev/null (`-` reads an empty plan).
//
// Kept bounded and harmless, so that a finding is a bug and not a long run asked for:
// - arguments holding '/' are refused: files are read and written (--trace, --svg, --out) only
//   in the scratch directory;
// - the flags that scale the work linearly by design (--iters, --periods, --search-iters,
//   `data gen`'s --records and --bytes, which write that much into the scratch directory, ...)
//   are capped; a value that is not a plain decimal integer is refused for them (CLI11 also
//   reads 0x.. and 0b.. forms, which would escape the cap). (`swp pp`'s --stages is not: it
//   is preset's too, there a list of names; swp pp simulate bounds it to 4096.)
// Properties: run_cli returns 0, 1 or 2, never throws, and (under ASan + UBSan) makes no
// memory error, no undefined behaviour, no leak.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace {

namespace fs = std::filesystem;

// The work-scaling flags and the largest value each may take here.
const std::map<std::string_view, long long>& caps() {
  static const std::map<std::string_view, long long> caps = {
      {"--iters", 48},     {"--periods", 64},      {"--search-iters", 12}, {"--max-candidates", 48},
      {"--warmup", 3},     {"--measure", 4},       {"--rounds", 3},        {"--workers", 4},
      {"--max-depth", 64}, {"--microbatches", 16}, {"--chunks", 4},        {"--layers", 4096},
      {"--records", 64},   {"--bytes", 256},
  };
  return caps;
}

bool plain_integer(std::string_view value) {
  if (!value.empty() && value.front() == '-') value.remove_prefix(1);
  if (value.empty() || value.size() > 18) return false;
  for (const char c : value)
    if (c < '0' || c > '9') return false;
  return true;
}

// Caps `value` of a work-scaling flag; false when it is not a plain integer.
bool cap(std::string& value, long long max) {
  if (!plain_integer(value)) return false;
  if (std::stoll(value) > max) value = std::to_string(max);
  return true;
}

// Splits the input into arguments and applies the bounds above; false to skip the input.
bool arguments(std::string_view input, std::vector<std::string>& args) {
  while (!input.empty()) {
    const auto end = input.find('\n');
    args.emplace_back(input.substr(0, end));
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  if (args.size() > 16) return false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg.find('/') != std::string::npos || arg.find('\0') != std::string::npos) return false;
    const auto equals = arg.find('=');
    const std::string flag = arg.substr(0, equals);
    const auto limit = caps().find(flag);
    if (limit == caps().end()) continue;
    if (equals != std::string::npos) {
      std::string value = arg.substr(equals + 1);
      if (!cap(value, limit->second)) return false;
      arg = flag + "=" + value;
    } else if (i + 1 < args.size() && !cap(args[i + 1], limit->second)) {
      return false;
    }
  }
  return true;
}

fs::path& scratch_dir() {
  static fs::path dir;
  return dir;
}

void copy_plans(const fs::path& from, const fs::path& to) {
  for (const auto& entry : fs::directory_iterator(from))
    if (entry.path().extension() == ".json")
      fs::copy_file(entry.path(), to / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char scratch[] = "/tmp/swp-fuzz-cli-XXXXXX";
  if (::mkdtemp(scratch) == nullptr) std::abort();
  copy_plans(SWP_FUZZ_PLANS, scratch);
  copy_plans(SWP_FUZZ_SEED_PLANS, scratch);
  fs::current_path(scratch);
  scratch_dir() = scratch;
  // libFuzzer ends with exit(): the directory goes then (kept after a crash, with its files).
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(scratch_dir(), ignored);
  });
  if (std::freopen("/dev/null", "r", stdin) == nullptr) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"swp"};
  if (!arguments(std::string_view(reinterpret_cast<const char*>(data), size), args)) return -1;
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  std::clearerr(stdin);  // `-` read it to its end before
  std::cin.clear();
  const int code = swp::cli::run_cli(static_cast<int>(args.size()), argv.data());
  if (code < 0 || code > 2) __builtin_trap();
  return 0;
}
