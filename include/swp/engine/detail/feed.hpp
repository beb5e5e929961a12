#pragma once
// Feed: the source of a run as the engine core sees it — a batch now, the end, or "not yet"
// while an awaitable source (or an empty channel) is waited for in the background.

#include <atomic>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "swp/async/cancelled.hpp"
#include "swp/async/channel.hpp"
#include "swp/async/co.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/engine/detail/front_end.hpp"
#include "swp/engine/source.hpp"

namespace swp::detail {

/// The batches of a pipeline's run, from a pull source (called synchronously), an awaitable
/// source or a channel (fetched by a background coroutine when they cannot answer at once).
/// The driver thread (progress(), next(), drain) calls everything but `ready`/`idle`, which
/// any thread may read. At most one fetch runs; it notifies the scheduler when it finished,
/// so a driver waiting in drive_until (or parked in next()) looks again.
template <class Batch>
class Feed {
 public:
  explicit Feed(Scheduler& scheduler) : scheduler_(scheduler) {}
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;
  // Precondition: idle() (the engine core waits for it before its pipeline goes). Waits for
  // the last fetch's notify() to return: the pipeline's owner may destroy the runtime (and its
  // scheduler) right after the pipeline, and the fetch ran on a thread the runtime does not join.
  ~Feed() { await_notified(); }

  /// The source of the next run. Precondition: idle(), and the last run's fetched batch taken
  /// (take_fetched; the engine core hands it back before it fills again, also after a run
  /// that could not drain).
  template <class S>
  void set(S&& source) {
    fetched_.reset();
    error_ = nullptr;
    ended_ = false;
    fetch_ended_ = false;
    abandoned_ = false;
    state_.store(no_fetch, std::memory_order_relaxed);  // idle(): no fetch runs
    pull_ = nullptr;
    async_ = nullptr;
    channel_ = nullptr;
    if constexpr (ChannelSourceOf<S, Batch>) {
      channel_ = &source;
    } else if constexpr (AwaitableSourceOf<S, Batch>) {
      async_ = AsyncSource<Batch>(std::forward<S>(source));
    } else {
      pull_ = make_source<Batch>(std::forward<S>(source));
    }
  }

  /// The next batch into `out` (admitted), the end of data (end), or pending: a fetch now
  /// runs in the background and `ready()` turns true when it finished. Rethrows the source's
  /// error (the pull call's, or the fetch's).
  Admission take(std::optional<Batch>& out) {
    if (pull_) {  // a pull source is called right here: no fetch, no fetched batch, no error kept
      if (ended_) return Admission::end;
      out = pull_();
      if (!out) ended_ = true;
      return out ? Admission::admitted : Admission::end;
    }
    return fetch(out);
  }
  /// What the last fetch received and take() did not hand out yet: at the end of a run that
  /// failed or was drained, a batch taken from the source but never admitted (also one a
  /// fetch cancelled by end() brought anyway). Nothing while a fetch still runs (a run that
  /// could not drain): what it brings stays here for a later call, once idle().
  std::optional<Batch> take_fetched() noexcept {
    // The fetch owns `fetched_` until it publishes `done` (acquire: its write is seen).
    if (!idle()) return std::nullopt;
    std::optional<Batch> out = std::move(fetched_);
    fetched_.reset();
    return out;
  }
  /// A fetch finished: take() will not say pending. Any thread.
  [[nodiscard]] bool ready() const noexcept {
    return state_.load(std::memory_order_acquire) == done;
  }
  /// No fetch runs. Any thread.
  [[nodiscard]] bool idle() const noexcept {
    return state_.load(std::memory_order_acquire) != running;
  }
  /// Ends the source for this run: take() says end from now on, after a batch a fetch already
  /// received. A running fetch is cancelled (its waits on swp awaitables throw Cancelled, so a
  /// channel gives up nothing); it still finishes in the background (see idle()), and a batch
  /// it brings all the same (its await ignored the cancellation) is not admitted: it came
  /// after the end, and take_fetched() hands it out.
  void end() {
    ended_ = true;
    if (state_.load(std::memory_order_acquire) == running) {
      abandoned_ = true;
      fetch_stop_.request_stop("source ended");
    }
  }

 private:
  // take() for a source that is not a pull source (out of line: the pull source's path stays
  // short enough to inline into the admission).
  [[gnu::noinline]] Admission fetch(std::optional<Batch>& out) {
    if (state_.load(std::memory_order_acquire) == running) return Admission::pending;
    if (state_.load(std::memory_order_relaxed) == done)
      state_.store(no_fetch, std::memory_order_relaxed);
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (fetched_ && !abandoned_) {
      out = std::move(fetched_);
      fetched_.reset();
      return Admission::admitted;
    }
    if (fetch_ended_) {
      fetch_ended_ = false;
      ended_ = true;
    }
    if (ended_) return Admission::end;
    if (channel_ != nullptr) {
      if ((out = channel_->try_receive())) return Admission::admitted;
      if (channel_->done()) {
        ended_ = true;
        return Admission::end;
      }
      start(receive());
    } else {
      start(call_source());
    }
    // A fetch that finished at once (the coroutine never suspended) is taken now.
    if (state_.load(std::memory_order_acquire) == done) return take(out);
    return Admission::pending;
  }

  enum : int { no_fetch = 0, running = 1, done = 2 };

  Co<void> call_source() { keep(co_await async_()); }
  Co<void> receive() { keep(co_await channel_->receive()); }
  // What a fetch brought: a batch, or the end of data. Published by the `done` store.
  void keep(std::optional<Batch> batch) {
    if (batch) {
      fetched_ = std::move(batch);
    } else {
      fetch_ended_ = true;
    }
  }

  void start(Co<void> fetch) {
    // The last fetch finished; its completion may still be inside notify(), after which it
    // writes `notified_`: wait for that before this fetch may write it again.
    await_notified();
    notified_.store(false, std::memory_order_relaxed);
    // Nothing waits on the last fetch's signal: it finished.
    fetch_stop_.reset();
    state_.store(running, std::memory_order_relaxed);
    // No Resumer: the fetch goes on on whichever thread completes what it awaits (a producer
    // sending on the channel, a lane completing a future, a timer).
    fetch.start_detached(
        nullptr,
        [](void* context, std::exception_ptr& error) noexcept {
          auto* self = static_cast<Feed*>(context);
          Scheduler& scheduler = self->scheduler_;
          // A cancelled fetch (end()) is no error: the source simply gave nothing.
          if (error && !self->is_cancel(error)) self->error_ = std::move(error);
          // After this store the driver may take the batch; it destroys the Feed (and then
          // perhaps the runtime whose scheduler is notified here) only once `notified_` says
          // this callback touches neither anymore.
          self->state_.store(done, std::memory_order_release);
          scheduler.notify();
          self->notified_.store(true, std::memory_order_release);
        },
        this, &fetch_stop_);
  }

  void await_notified() const noexcept {
    // A few instructions of the fetch's completion are left at most: yield, do not sleep.
    while (!notified_.load(std::memory_order_acquire)) std::this_thread::yield();
  }

  [[nodiscard]] bool is_cancel(const std::exception_ptr& error) const noexcept {
    if (!fetch_stop_.stop_requested()) return false;
    try {
      std::rethrow_exception(error);
    } catch (const Cancelled&) {
      return true;
    } catch (...) {
      return false;
    }
  }

  Scheduler& scheduler_;
  Source<Batch> pull_;
  AsyncSource<Batch> async_;
  Channel<Batch>* channel_ = nullptr;
  // What the last fetch brought (written by the fetch before it publishes `done`).
  std::optional<Batch> fetched_;
  std::exception_ptr error_;
  bool fetch_ended_ = false;  // the last fetch saw the end of data
  bool ended_ = false;        // take() says end
  bool abandoned_ = false;    // end() cancelled a running fetch: its batch is not admitted
  StopSignal fetch_stop_;
  std::atomic<int> state_{no_fetch};
  std::atomic<bool> notified_{true};  // the last fetch's completion returned from notify()
};

}  // namespace swp::detail
