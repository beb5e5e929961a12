#pragma once
// swp-bench loader: the data loader's throughput against plain sequential reads of the same
// files from the page cache, measured in one run, with and without shuffling.

#include <cstdint>
#include <string>

namespace swp_bench {

struct LoaderBenchOptions {
  std::uint64_t records = 2048;  ///< records of the generated dataset
  std::uint64_t bytes = 65536;   ///< payload bytes per record
  std::uint64_t files = 8;
  std::uint64_t batch_records = 16;
  std::uint64_t prefetch = 8;      ///< batches read ahead
  std::uint64_t read_threads = 2;  ///< threads of the pread reader
  int rounds = 5;                  ///< interleaved rounds; medians reported
  std::string dir;                 ///< dataset directory (default: a temporary one, removed)
};

/// Prints raw_read_mb_per_s, loader_mb_per_s, loader_over_raw, stall_us_per_batch, their
/// shuffled counterparts (loader_shuffled_*), and the pread reader's figures (loader_pread_*).
void run_loader(const LoaderBenchOptions& options);

}  // namespace swp_bench
