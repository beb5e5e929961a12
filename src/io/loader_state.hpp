#pragma once
// LoaderState: the shared state behind Loader handles — the epoch's plan, the window of
// batches read ahead, the readers and the decode pool. Private to src/io.

#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "swp/async/resumer.hpp"
#include "swp/io/batch.hpp"
#include "swp/io/detail/buffer_pool.hpp"
#include "swp/io/detail/file_reader.hpp"
#include "swp/io/detail/work_pool.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/record_file.hpp"

namespace swp::io::detail {

/// One read of a planned batch: `bytes` at `offset` of `file`, into the batch buffer at `at`.
struct PlannedRead {
  std::uint32_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t at = 0;
};

/// A batch of the epoch: records [first, first + count) of the order, its reads, its size.
struct PlannedBatch {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::vector<PlannedRead> reads;
};

/// A batch read ahead: reading, decoding, or done (with its batch or its error).
struct Slot {
  std::uint64_t number = 0;
  std::uint64_t bytes = 0;
  std::size_t reads_left = 0;
  bool done = false;
  std::exception_ptr error;
  Batch batch;
};

class LoaderState {
 public:
  LoaderState(std::vector<std::filesystem::path> files, LoaderOptions options);
  LoaderState(const LoaderState&) = delete;
  LoaderState& operator=(const LoaderState&) = delete;
  ~LoaderState();

  /// What the consumer's call gets now.
  enum class Poll { wait, batch, end, error };
  /// Under the lock: deliver the front batch, the end, the error (once drained), or wait.
  Poll poll(std::unique_lock<std::mutex>& lock, std::optional<Batch>& out,
            std::exception_ptr& error);

  std::optional<Batch> take();
  /// Drains and restarts; on a thread the loader resumed a next() on (whose reads may need
  /// this very thread) it leaves the drain and the restart to the next call instead.
  void restart(std::uint64_t epoch);

  /// The deleter of the Loader handles' shared state: deletes `state` here, or — on a thread
  /// of its own running a coroutine it resumed, whose reads and decodes may need this very
  /// thread to finish — on a new thread, so the drain and the joins never wait for the caller.
  static void destroy(LoaderState* state) noexcept;

  /// For the next() awaiter: poll(), and when it says wait, register `h` to be resumed
  /// (through `resumer`) once poll() would not.
  Poll suspend(std::coroutine_handle<> h, Resumer* resumer, std::optional<Batch>& out,
               std::exception_ptr& error);
  /// Called by the awaiter on resumption: the poll result (never wait).
  std::optional<Batch> resume_result();
  /// Notes the start of a wait for the stall measure.
  void note_stall_start();
  /// Under the lock: the epoch the next batch comes from.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return restart_to_.value_or(epoch_); }
  [[nodiscard]] ReaderKind reader_kind() const noexcept { return reader_->kind(); }
  LoaderStats stats();

  std::mutex mutex_;
  LoaderOptions options_;
  std::vector<RecordFile> files_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t dataset_records_ = 0;
  std::uint64_t dataset_bytes_ = 0;
  std::uint64_t batches_per_epoch_ = 0;
  std::uint64_t records_per_epoch_ = 0;
  LoaderStats stats_;

 private:
  void start_epoch_locked();
  /// Issues the reads of the batches the window has room for. A batch whose buffer or reads
  /// cannot be had (read() threw) fails in the window like a failed read, naming the read. A
  /// throw before the batch enters the window (std::bad_alloc making its slot) changed nothing
  /// and reaches the caller: the consumer from poll(), the loader's failure from
  /// finish_restart_locked().
  void issue_locked();
  void fail_issue_locked(Slot& slot, const PlannedRead& read, std::size_t not_issued,
                         std::exception_ptr cause) noexcept;
  /// The error of a batch not issued: a RecordError naming `read` (its first read not issued)
  /// and `cause`; with no read (the epoch not planned), one naming the epoch; the cause itself
  /// where there is no memory for the message.
  [[nodiscard]] std::exception_ptr not_issued_error(const PlannedRead* read,
                                                    std::exception_ptr cause) const noexcept;
  // The reader's and the decode pool's callbacks: nothing escapes them (they run on the
  // loader's threads, where an exception would end the process).
  void on_read(Slot& slot, std::exception_ptr error) noexcept;
  void decode(Slot& slot) noexcept;
  [[nodiscard]] bool deliverable_locked() const;
  [[nodiscard]] bool drained_locked() const { return reads_in_flight_ == 0 && decodes_ == 0; }
  void wake_locked(std::coroutine_handle<>& h, Resumer*& resumer);
  static void resume_waiter(const LoaderState* state, Resumer* resumer, std::coroutine_handle<> h);
  void finish(std::unique_lock<std::mutex>& lock);
  void drain_locked(std::unique_lock<std::mutex>& lock);
  void restart_locked(std::uint64_t epoch);
  void finish_restart_locked() noexcept;

  std::shared_ptr<BufferPool> pool_;
  std::condition_variable changed_;
  std::uint64_t epoch_ = 0;
  bool started_ = false;
  bool failed_ = false;         // a slot failed: issue nothing more
  std::exception_ptr failure_;  // thrown (as LoaderError) by every call until restart()
  // The epoch or batch a loader's thread could not start (finish_restart_locked): with
  // failed_, it fails the loader once the batches issued before it were handed out.
  std::exception_ptr not_issued_;
  // A restart() that could not wait for the drain (called on the loader's own thread): the
  // next call waits for it and restarts at this epoch.
  std::optional<std::uint64_t> restart_to_;
  std::vector<RecordRef> order_;
  std::vector<PlannedBatch> plan_;
  std::uint64_t next_issue_ = 0;
  std::deque<std::unique_ptr<Slot>> window_;
  std::size_t window_bytes_ = 0;
  std::size_t reads_in_flight_ = 0;
  std::size_t decodes_ = 0;
  std::coroutine_handle<> waiter_;
  Resumer* waiter_resumer_ = nullptr;
  std::optional<std::chrono::steady_clock::time_point> stall_since_;
  // Last: destroyed first, so their threads are gone before the state they call back into.
  std::unique_ptr<WorkPool> decode_pool_;
  std::unique_ptr<FileReader> reader_;
};

}  // namespace swp::io::detail
