#include "loader_state.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "swp/io/detail/teardown_threads.hpp"
#include "swp/io/read_order.hpp"

namespace swp::io::detail {

namespace {
// The loader whose next() this thread is resuming inline (a waiter without a Resumer, e.g.
// under sync_wait): the consumer's code runs on the loader's own read, ring or decode thread
// until it next suspends. Tearing the loader down or draining it for restart() there would
// wait for reads and decodes that only this thread can finish, then join it.
thread_local const LoaderState* resuming_for = nullptr;

// Marks this thread as resuming a waiter of `state` for the scope (nests: restores the loader
// it was resuming for before).
class ResumingScope {
 public:
  explicit ResumingScope(const LoaderState* state) noexcept
      : previous_(std::exchange(resuming_for, state)) {}
  ResumingScope(const ResumingScope&) = delete;
  ResumingScope& operator=(const ResumingScope&) = delete;
  ~ResumingScope() { resuming_for = previous_; }

 private:
  const LoaderState* previous_;
};

void check(const LoaderOptions& o) {
  const auto bad = [&](const std::string& what) {
    throw std::invalid_argument("loader '" + o.name + "': " + what);
  };
  if (o.batch_records == 0) bad("batch_records must be at least 1");
  if (o.prefetch_batches == 0) bad("prefetch_batches must be at least 1");
  if (o.world == 0) bad("world must be at least 1");
  if (o.rank >= o.world)
    bad("rank " + std::to_string(o.rank) + " must be below world " + std::to_string(o.world));
  if (o.read_threads == 0) bad("read_threads must be at least 1");
  if (o.decode_threads == 0) bad("decode_threads must be at least 1");
}
}  // namespace

LoaderState::LoaderState(std::vector<std::filesystem::path> files, LoaderOptions options)
    : options_(std::move(options)), pool_(std::make_shared<BufferPool>(options_.pinned)) {
  check(options_);
  if (files.empty()) throw std::invalid_argument("loader '" + options_.name + "': no files");
  std::vector<ReaderFile> reader_files;
  for (auto& path : files) {
    files_.emplace_back(std::move(path));  // RecordError: missing, truncated, corrupt index
    counts_.push_back(files_.back().size());
    dataset_records_ += files_.back().size();
    dataset_bytes_ += files_.back().data_bytes();
    reader_files.push_back({files_.back().path(), files_.back().fd()});
  }
  const std::uint64_t share =
      share_begin(dataset_records_, std::uint64_t{options_.rank} + 1, options_.world) -
      share_begin(dataset_records_, options_.rank, options_.world);
  // Rounded up without forming share + batch_records - 1, which wraps for a batch_records
  // near SIZE_MAX ("the whole epoch in one batch").
  const std::uint64_t batch = options_.batch_records;
  records_per_epoch_ = options_.drop_last ? share - share % batch : share;
  batches_per_epoch_ = records_per_epoch_ / batch + (records_per_epoch_ % batch != 0 ? 1 : 0);
  decode_pool_ = std::make_unique<WorkPool>(options_.decode_threads);
  reader_ = make_file_reader(options_.reader, std::move(reader_files), options_.read_threads);
}

void LoaderState::destroy(LoaderState* state) noexcept {
  if (resuming_for != state) {
    delete state;
    return;
  }
  // The last handle went inside a coroutine this thread resumed for the loader: the loader ends
  // on a thread that is not its own, while this one returns to the loop it came from (which
  // the teardown then joins). A later loader at the same address is not this one.
  // The thread is one of TeardownThreads::process(), which static destruction joins before it
  // destroys the objects the teardown uses (it joins threads, frees buffers, maybe through the
  // CUDA runtime, and closes files): the process cannot exit while a teardown still runs.
  resuming_for = nullptr;
  try {
    TeardownThreads::process().start([state] { delete state; });
  } catch (...) {  // NOLINT(bugprone-empty-catch): no thread to spare, or the process is exiting
    // Deleting here would wait on this thread forever: the loader (its threads, buffers and
    // file descriptors) is leaked instead.
  }
}

LoaderState::~LoaderState() {
  std::unique_lock lock(mutex_);
  failed_ = true;  // nothing new is issued; what is in flight completes into the window
  changed_.wait(lock, [this] { return drained_locked(); });
}

void LoaderState::start_epoch_locked() {
  order_ = epoch_order(counts_,
                       {.shuffle = options_.shuffle,
                        .seed = options_.seed,
                        .rank = options_.rank,
                        .world = options_.world},
                       epoch_);
  order_.resize(records_per_epoch_);  // drop_last
  plan_.clear();
  plan_.reserve(batches_per_epoch_);
  for (std::uint64_t first = 0; first < order_.size();) {
    PlannedBatch b{.first = first,
                   .count = std::min<std::uint64_t>(options_.batch_records, order_.size() - first),
                   .bytes = 0,
                   .reads = {}};
    // Records that follow each other in one file are one read, so an unshuffled epoch reads
    // each batch with one or two large reads.
    for (std::uint64_t i = first; i < first + b.count; ++i) {
      const RecordRef r = order_[i];
      const IndexEntry& e = files_[r.file].entry(r.record);
      const std::uint64_t size = frame_bytes(e.length);
      if (i > first && order_[i - 1].file == r.file && order_[i - 1].record + 1 == r.record) {
        b.reads.back().bytes += size;
      } else {
        b.reads.push_back({.file = r.file, .offset = e.offset, .bytes = size, .at = b.bytes});
      }
      b.bytes += size;
    }
    first += b.count;  // not first + batch_records: that wraps for a batch near SIZE_MAX
    plan_.push_back(std::move(b));
  }
  next_issue_ = 0;
  started_ = true;
}

void LoaderState::issue_locked() {
  while (!failed_ && next_issue_ < plan_.size() && window_.size() < options_.prefetch_batches &&
         (window_.empty() || window_bytes_ + plan_[next_issue_].bytes <= options_.prefetch_bytes)) {
    const PlannedBatch& b = plan_[next_issue_];
    auto slot = std::make_unique<Slot>();
    slot->number = next_issue_;
    slot->bytes = b.bytes;
    slot->reads_left = b.reads.size();
    slot->batch.number_ = slot->number;
    slot->batch.epoch_ = epoch_;
    Slot& s = *slot;
    // Up to here a throw (std::bad_alloc) changed nothing, and reaches the caller. From here
    // the batch is in the window, and a failure to issue it fails it there instead.
    window_.push_back(std::move(slot));
    ++next_issue_;
    window_bytes_ += b.bytes;
    stats_.peak_prefetched_batches = std::max(stats_.peak_prefetched_batches, window_.size());
    stats_.peak_prefetched_bytes = std::max(stats_.peak_prefetched_bytes, window_bytes_);
    std::size_t issued = 0;
    try {
      s.batch.buffer_ = pool_->acquire(b.bytes);
      s.batch.bytes_ = {s.batch.buffer_->data, b.bytes};
      for (; issued < b.reads.size(); ++issued) {
        const PlannedRead& r = b.reads[issued];
        // The readers complete on their own threads, never inside read(): the lock held here
        // is free by then. A read() that throws accepted nothing (FileReader).
        reader_->read(r.file, r.offset, s.batch.bytes_.subspan(r.at, r.bytes),
                      [this, &s](std::exception_ptr error) { on_read(s, std::move(error)); });
        ++reads_in_flight_;
        ++stats_.reads;
        stats_.read_bytes += r.bytes;
      }
    } catch (...) {
      fail_issue_locked(s, b.reads[issued], b.reads.size() - issued, std::current_exception());
    }
  }
}

void LoaderState::fail_issue_locked(Slot& slot, const PlannedRead& read, std::size_t not_issued,
                                    std::exception_ptr cause) noexcept {
  // The reads not issued never complete: the slot is done once the issued ones did.
  slot.reads_left -= not_issued;
  slot.done = slot.reads_left == 0;
  failed_ = true;
  slot.error = not_issued_error(&read, std::move(cause));
}

std::exception_ptr LoaderState::not_issued_error(const PlannedRead* read,
                                                 std::exception_ptr cause) const noexcept {
  try {
    std::string why = "unknown error";
    try {
      std::rethrow_exception(cause);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {  // NOLINT(bugprone-empty-catch): "unknown error"
    }
    if (read == nullptr)
      return std::make_exception_ptr(
          std::runtime_error("epoch " + std::to_string(epoch_) + " not started: " + why));
    return std::make_exception_ptr(
        RecordError(files_[read->file].path(), read->offset, "read not issued: " + why));
  } catch (...) {  // no memory for the message: the cause itself
    return cause;
  }
}

void LoaderState::on_read(Slot& slot, std::exception_ptr error) noexcept {
  std::coroutine_handle<> h;
  Resumer* resumer = nullptr;
  bool decode_here = false;
  {
    std::lock_guard lock(mutex_);
    --reads_in_flight_;
    if (error && !slot.error) slot.error = std::move(error);
    if (slot.error) failed_ = true;
    if (--slot.reads_left == 0) {
      if (slot.error) {
        slot.done = true;
      } else {
        ++decodes_;
        // Verification only, on a reader whose completions run on a pool of threads (pread):
        // right here, while the bytes just read are in this core's cache, and without waking
        // another thread. A user decode step, or a reader completing on its one io thread
        // (uring), goes to the decode pool.
        decode_here = !options_.decode && reader_->completes_on_pool();
        if (!decode_here) {
          try {
            decode_pool_->post([this, &slot] { decode(slot); });
          } catch (...) {
            // No memory to queue it (std::bad_alloc): decoded here instead, as it would be on
            // a pread pool (the lock is released first either way).
            decode_here = true;
          }
        }
      }
    }
    finish_restart_locked();
    wake_locked(h, resumer);
  }
  if (decode_here) decode(slot);
  if (h) resume_waiter(this, resumer, h);
}

void LoaderState::decode(Slot& slot) noexcept {
  std::exception_ptr error;
  try {
    // Verify every frame and collate: the batch's record views point into its buffer, where
    // the reads placed the frames in batch order.
    const PlannedBatch& b = plan_[slot.number];
    Batch& batch = slot.batch;
    batch.records_.clear();
    batch.refs_.assign(order_.begin() + static_cast<std::ptrdiff_t>(b.first),
                       order_.begin() + static_cast<std::ptrdiff_t>(b.first + b.count));
    std::uint64_t at = 0;
    for (const RecordRef& r : batch.refs_) {
      const IndexEntry& e = files_[r.file].entry(r.record);
      const auto frame = batch.bytes_.subspan(at, frame_bytes(e.length));
      batch.records_.push_back(verify_frame(files_[r.file].path(), e, frame));
      batch.payload_bytes_ += e.length;
      at += frame.size();
    }
    if (options_.decode) options_.decode(batch);
  } catch (...) {
    error = std::current_exception();
  }
  std::coroutine_handle<> h;
  Resumer* resumer = nullptr;
  {
    std::lock_guard lock(mutex_);
    --decodes_;
    slot.done = true;
    if (error) {
      slot.error = std::move(error);
      failed_ = true;
    }
    finish_restart_locked();
    wake_locked(h, resumer);
  }
  if (h) resume_waiter(this, resumer, h);
}

// A waiter with a Resumer continues in its own context; one without continues right here,
// marked, so that dropping the loader or restarting it from its code cannot deadlock.
// Static: `state` may be gone when h.resume() returns (the consumer dropped the last handle).
void LoaderState::resume_waiter(const LoaderState* state, Resumer* resumer,
                                std::coroutine_handle<> h) {
  if (resumer != nullptr) {
    resumer->resume(h);
    return;
  }
  const ResumingScope scope(state);
  h.resume();
}

bool LoaderState::deliverable_locked() const {
  // Whether a waiter's poll() would not say wait (it registered after one that did).
  if (restart_to_) return drained_locked();
  if (failure_ || !started_) return true;
  if (window_.empty()) return !failed_ || drained_locked();
  const Slot& front = *window_.front();
  return front.done && (!front.error || drained_locked());
}

void LoaderState::wake_locked(std::coroutine_handle<>& h, Resumer*& resumer) {
  changed_.notify_all();
  if (waiter_ && deliverable_locked()) {
    h = std::exchange(waiter_, nullptr);
    resumer = std::exchange(waiter_resumer_, nullptr);
  }
}

LoaderState::Poll LoaderState::poll(std::unique_lock<std::mutex>& lock, std::optional<Batch>& out,
                                    std::exception_ptr& error) {
  (void)lock;
  if (restart_to_) {
    if (!drained_locked()) return Poll::wait;
    restart_locked(*restart_to_);
  }
  if (failure_) {
    error = failure_;
    return Poll::error;
  }
  if (!started_ && !not_issued_) start_epoch_locked();
  issue_locked();
  if (window_.empty()) {
    if (failed_ && !drained_locked()) return Poll::wait;
    if (not_issued_) {
      failure_ = std::make_exception_ptr(LoaderError(options_.name, not_issued_));
      error = failure_;
      return Poll::error;
    }
    // The end of the epoch: the next call starts the next one.
    started_ = false;
    ++epoch_;
    stall_since_.reset();
    return Poll::end;
  }
  Slot& front = *window_.front();
  if (!front.done) return Poll::wait;
  if (front.error) {
    if (!drained_locked()) return Poll::wait;
    failure_ = std::make_exception_ptr(LoaderError(options_.name, front.error));
    window_.clear();
    window_bytes_ = 0;
    error = failure_;
    return Poll::error;
  }
  out = std::move(front.batch);
  window_bytes_ -= front.bytes;
  window_.pop_front();
  stats_.batches += 1;
  stats_.records += out->size();
  stats_.payload_bytes += out->payload_bytes();
  if (stall_since_) {
    stats_.stall += std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - *stall_since_);
    stats_.stalls += 1;
    stall_since_.reset();
  }
  issue_locked();  // the batch taken frees room in the window
  return Poll::batch;
}

void LoaderState::note_stall_start() {
  if (!stall_since_) stall_since_ = std::chrono::steady_clock::now();
}

std::optional<Batch> LoaderState::take() {
  std::unique_lock lock(mutex_);
  std::optional<Batch> out;
  std::exception_ptr error;
  for (;;) {
    switch (poll(lock, out, error)) {
      case Poll::batch:
        return out;
      case Poll::end:
        return std::nullopt;
      case Poll::error:
        std::rethrow_exception(error);
      case Poll::wait:
        note_stall_start();
        changed_.wait(lock);
    }
  }
}

LoaderState::Poll LoaderState::suspend(std::coroutine_handle<> h, Resumer* resumer,
                                       std::optional<Batch>& out, std::exception_ptr& error) {
  std::unique_lock lock(mutex_);
  const Poll now = poll(lock, out, error);
  if (now == Poll::wait) {
    note_stall_start();
    waiter_ = h;
    waiter_resumer_ = resumer;
  }
  return now;
}

std::optional<Batch> LoaderState::resume_result() {
  // A resumed waiter saw a batch, the end or an error ready; take() waits only when poll()
  // itself started an epoch's reads.
  return take();
}

LoaderStats LoaderState::stats() {
  const auto counts = pool_->counts();
  std::lock_guard lock(mutex_);
  LoaderStats out = stats_;
  out.prefetched_batches = window_.size();
  out.prefetched_bytes = window_bytes_;
  out.reads_in_flight = reads_in_flight_;
  out.buffers_allocated = counts.allocated;
  out.buffer_bytes = counts.allocated_bytes;
  return out;
}

void LoaderState::drain_locked(std::unique_lock<std::mutex>& lock) {
  failed_ = true;
  changed_.wait(lock, [this] { return drained_locked(); });
}

void LoaderState::restart(std::uint64_t epoch) {
  std::unique_lock lock(mutex_);
  if (waiter_) throw std::logic_error("loader '" + options_.name + "': restart during next()");
  failed_ = true;  // nothing new is issued
  if (resuming_for == this && !drained_locked()) {
    // This thread resumed the caller for the loader: the reads and decodes in flight may need
    // it to complete, so waiting for them here could wait forever. The next call waits.
    restart_to_ = epoch;
    return;
  }
  drain_locked(lock);
  restart_locked(epoch);
}

// The read or decode that drains the loader completes a restart() left pending. A waiter
// registered meanwhile (its poll() said wait) is not woken to restart: it would then start the
// epoch's reads from its await_resume and wait for them there, maybe on this very thread.
// The new epoch's reads start here instead, and it is woken with its batch as usual.
// That runs on a reader or decode thread, where a throw (std::bad_alloc planning the epoch or
// making a batch's slot) has no caller to reach: it fails the loader instead, after the batches
// issued before it, as a read that could not be issued does.
void LoaderState::finish_restart_locked() noexcept {
  if (!restart_to_ || !drained_locked()) return;
  restart_locked(*restart_to_);
  if (!waiter_) return;
  try {
    start_epoch_locked();
    issue_locked();
  } catch (...) {
    failed_ = true;
    not_issued_ = not_issued_error(
        started_ && next_issue_ < plan_.size() ? &plan_[next_issue_].reads.front() : nullptr,
        std::current_exception());
  }
}

void LoaderState::restart_locked(std::uint64_t epoch) {
  window_.clear();
  window_bytes_ = 0;
  failed_ = false;
  failure_ = nullptr;
  not_issued_ = nullptr;
  started_ = false;
  epoch_ = epoch;
  stall_since_.reset();
  restart_to_.reset();
}

}  // namespace swp::io::detail
