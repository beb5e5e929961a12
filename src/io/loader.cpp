#include "swp/io/loader.hpp"

#include <utility>

#include "loader_state.hpp"
#include "swp/io/dataset.hpp"

namespace swp::io {

namespace {
// The awaiter of next(): polls once under the loader's lock and, when the batch is not there
// yet, registers the coroutine in the same critical section (no wake-up can fall between).
class NextAwaiter {
 public:
  explicit NextAwaiter(detail::LoaderState& state) : state_(state) {}
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> h) {
    // Once suspend() registered the coroutine it may be resumed (and this awaiter destroyed)
    // on another thread at once: nothing of *this is written after a wait.
    const auto now = state_.suspend(h, swp::detail::resumer_of(h), out_, error_);
    if (now == detail::LoaderState::Poll::wait) return true;
    now_ = now;
    return false;
  }
  std::optional<Batch> await_resume() {
    if (now_ == detail::LoaderState::Poll::wait) return state_.resume_result();
    if (error_) std::rethrow_exception(error_);
    return std::move(out_);
  }

 private:
  detail::LoaderState& state_;
  detail::LoaderState::Poll now_ = detail::LoaderState::Poll::wait;
  std::optional<Batch> out_;
  std::exception_ptr error_;
};
}  // namespace

const char* to_string(ReaderKind kind) noexcept {
  switch (kind) {
    case ReaderKind::automatic:
      return "automatic";
    case ReaderKind::uring:
      return "uring";
    case ReaderKind::pread:
      return "pread";
  }
  return "?";
}

bool Batch::pinned() const noexcept { return buffer_ != nullptr && buffer_->pinned; }

Loader::Loader(std::vector<std::filesystem::path> files, LoaderOptions options)
    : state_(new detail::LoaderState(std::move(files), std::move(options)),
             &detail::LoaderState::destroy) {}

Loader Loader::open_dir(const std::filesystem::path& dir, LoaderOptions options) {
  return Loader(list_dataset(dir), std::move(options));
}

Co<std::optional<Batch>> Loader::next() {
  // The handle is copied into the frame: the loader lives while a next() is in progress.
  auto state = state_;
  co_return co_await NextAwaiter(*state);
}

std::optional<Batch> Loader::take() { return state_->take(); }
void Loader::restart(std::uint64_t epoch) { state_->restart(epoch); }

std::uint64_t Loader::epoch() const {
  std::lock_guard lock(state_->mutex_);
  return state_->epoch();
}
std::uint64_t Loader::batches_per_epoch() const { return state_->batches_per_epoch_; }
std::uint64_t Loader::records_per_epoch() const { return state_->records_per_epoch_; }
std::uint64_t Loader::dataset_records() const { return state_->dataset_records_; }
std::uint64_t Loader::dataset_bytes() const { return state_->dataset_bytes_; }
ReaderKind Loader::reader() const { return state_->reader_kind(); }
const LoaderOptions& Loader::options() const { return state_->options_; }
LoaderStats Loader::stats() const { return state_->stats(); }

}  // namespace swp::io
