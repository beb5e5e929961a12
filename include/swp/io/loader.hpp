#pragma once
// Loader: the asynchronous data loader — record files read ahead with asynchronous reads,
// verified and decoded on a CPU pool, collated into reusable batch buffers, in a deterministic
// or seeded-shuffled order, sharded by rank, with bounded prefetch.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/io/batch.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/loader_options.hpp"

namespace swp::io {

namespace detail {
class LoaderState;
}

/// What a loader did so far (all epochs).
struct LoaderStats {
  std::uint64_t batches = 0;  ///< batches handed to the consumer
  std::uint64_t records = 0;
  std::uint64_t payload_bytes = 0;     ///< payload bytes handed out
  std::uint64_t read_bytes = 0;        ///< bytes read from the files (frames)
  std::uint64_t reads = 0;             ///< read operations issued (consecutive records coalesce)
  std::chrono::nanoseconds stall{};    ///< time next()/take() waited for a batch not ready yet
  std::uint64_t stalls = 0;            ///< calls that waited
  std::size_t prefetched_batches = 0;  ///< now: batches read ahead, not taken yet
  std::size_t prefetched_bytes = 0;    ///< now: their bytes
  std::size_t reads_in_flight = 0;     ///< now: reads issued, not completed
  std::size_t peak_prefetched_batches = 0;
  std::size_t peak_prefetched_bytes = 0;
  std::uint64_t buffers_allocated = 0;  ///< batch buffers ever allocated by the pool
  std::uint64_t buffer_bytes = 0;       ///< bytes of the pool's buffers alive now
  /// stall / batches, the consumer's mean wait per batch.
  [[nodiscard]] double stall_us_per_batch() const noexcept {
    return batches == 0 ? 0.0
                        : std::chrono::duration<double, std::micro>(stall).count() /
                              static_cast<double>(batches);
  }
};

/// An asynchronous data loader over record files. Copies are handles to the same loader (so a
/// pipeline can hold one as its source); the loader ends when the last handle goes, after
/// the reads in flight completed.
///
/// An epoch is the records of `epoch_order(...)` (this rank's share, shuffled or not) cut into
/// batches of `batch_records`. Batches come out in that order, whatever order their reads
/// complete in. Reads are issued ahead while fewer than `prefetch_batches` batches and
/// `prefetch_bytes` bytes are read ahead (at least one batch): a slow consumer holds the
/// loader at that bound, never more. The first next() of an epoch starts its reads; after the
/// epoch's last batch next() completes with an empty optional, and the call after that starts
/// the next epoch (so `pipe.fill_pipeline(loader)` once per epoch runs epoch after epoch).
///
/// Completion: next() completes with the next batch once it was read and verified, or empty
/// at the end of the epoch; take() is the same, blocking the calling thread. One call at a
/// time. A suspended next() resumes through its coroutine's Resumer (a pipeline lane), else
/// inline on the loader's thread that finished the batch (a pread read thread, an io_uring
/// ring's thread or a decode thread), where the coroutine runs until it next suspends (e.g.
/// under sync_wait). There, dropping the last handle is safe (the loader ends on a thread it
/// starts for that, after its reads in flight completed; the process waits for that thread at
/// exit, before destroying its static objects), and so is restart() (it returns at once and
/// the next call waits for the drain); take() there may deadlock (it would wait for work only
/// that thread can finish): await next() instead.
/// Errors: the constructor throws RecordError for a missing, truncated or corrupt file header
/// or index, or a path that is not a regular file (file and offset; see RecordFile),
/// std::invalid_argument for bad options (naming them) and std::runtime_error when
/// ReaderKind::uring is asked for where io_uring is unavailable. A failed read (truncated
/// file, OS error), a read the reader could not issue (it threw, e.g. std::bad_alloc: a
/// RecordError naming that read's file and offset), an epoch or batch the loader's own thread
/// could not start finishing a restart() left pending (std::bad_alloc: a RecordError naming the
/// batch's first read, or "epoch N not started"), a record whose checksum does not match
/// (file and offset), or a `decode` exception, fails the loader: no new reads are issued, the
/// batches before the failing one are still handed out, and the call that would return the
/// failing one throws LoaderError (naming the loader; nested: the RecordError) once every read
/// in flight completed — and so does every later call, until restart(). In a pipeline it
/// surfaces from progress()/next() as CallbackError (source) nesting the LoaderError.
/// Cancellation: a next() waits for reads that always complete; it is not cancelled by a
/// pipeline's stop signal (the pipeline waits for it, a read's time at most).
///
/// Example:
/// ```
/// swp::io::Loader loader(swp::io::list_dataset("data"), {.batch_records = 64, .shuffle = true});
/// pipe.fill_pipeline(loader);                       // a pipeline source: one epoch
/// while (auto retired = pipe.progress()) ...;
/// while (auto batch = co_await loader.next()) use(*batch);  // standalone: the next epoch
/// ```
class Loader {
 public:
  Loader(std::vector<std::filesystem::path> files, LoaderOptions options);
  /// The record files of `dir` (list_dataset).
  static Loader open_dir(const std::filesystem::path& dir, LoaderOptions options);

  /// The next batch of the epoch, or empty at its end (see the class comment).
  Co<std::optional<Batch>> next();
  /// The awaitable source form for Pipeline::fill_pipeline: next().
  Co<std::optional<Batch>> operator()() { return next(); }
  /// next(), blocking the calling thread.
  std::optional<Batch> take();

  /// Drops what was read ahead (after the reads in flight completed) and makes the next call
  /// start epoch `epoch` (for resuming a run); also clears a failure. Throws std::logic_error
  /// during a next(). On the loader's own thread that resumed a next() (see above) it does
  /// not wait: the next call waits for the reads in flight, then starts epoch `epoch`.
  void restart(std::uint64_t epoch);

  /// The epoch the next batch comes from.
  [[nodiscard]] std::uint64_t epoch() const;
  /// Batches and records of an epoch for this rank.
  [[nodiscard]] std::uint64_t batches_per_epoch() const;
  [[nodiscard]] std::uint64_t records_per_epoch() const;
  /// Records in the whole dataset (all ranks) and their payload bytes.
  [[nodiscard]] std::uint64_t dataset_records() const;
  [[nodiscard]] std::uint64_t dataset_bytes() const;
  /// The reader in use (never automatic).
  [[nodiscard]] ReaderKind reader() const;
  [[nodiscard]] const LoaderOptions& options() const;
  [[nodiscard]] LoaderStats stats() const;

 private:
  std::shared_ptr<detail::LoaderState> state_;
};

}  // namespace swp::io
