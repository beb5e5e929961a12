#pragma once
// LoaderOptions: what a Loader reads, in which order, with how much read-ahead.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace swp::io {

class Batch;

/// How a loader issues its reads.
enum class ReaderKind {
  automatic,  ///< io_uring where compiled in and permitted by the kernel, else pread
  uring,      ///< io_uring through liburing (rings with their own threads); an error if unavailable
  pread,      ///< a pool of threads calling pread(2)
};

/// "automatic", "uring" or "pread".
[[nodiscard]] const char* to_string(ReaderKind kind) noexcept;

/// The options of a Loader. Defaults: deterministic order, one rank, 4 batches / 64 MiB ahead.
struct LoaderOptions {
  std::string name = "loader";  ///< named by its errors (LoaderError::loader)
  /// Records per batch (the last one may have fewer); any value from 1: one larger than the
  /// epoch (SIZE_MAX too) makes the epoch one batch.
  std::size_t batch_records = 32;
  bool drop_last = false;            ///< drop a last batch shorter than batch_records
  bool shuffle = false;              ///< a seeded permutation per epoch, across all files
  std::uint64_t seed = 0;            ///< the shuffle's seed (with the epoch number)
  std::uint32_t rank = 0;            ///< this data-parallel rank, in [0, world)
  std::uint32_t world = 1;           ///< ranks reading disjoint shares of every epoch
  std::size_t prefetch_batches = 4;  ///< batches read ahead (reading, decoding or ready)
  std::size_t prefetch_bytes = std::size_t{64} << 20;  ///< bytes of those batches (at least one)
  ReaderKind reader = ReaderKind::automatic;
  std::size_t read_threads = 2;    ///< reader threads (pread threads, or io_uring rings)
  std::size_t decode_threads = 1;  ///< threads verifying checksums and running `decode`
  bool pinned = true;  ///< page-locked buffers where the program has the CUDA backend (a GPU)
  /// Runs on the decode pool on each batch after its checksums were verified (may be empty):
  /// parse, convert, augment in place. An exception fails the loader like a corrupt record.
  std::function<void(Batch&)> decode = {};
};

}  // namespace swp::io
