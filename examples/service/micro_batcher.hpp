#pragma once
// MicroBatcher: gathers requests into batches and submits them to the pipeline, with
// back-pressure on the connections that feed it.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <span>
#include <swp/asio.hpp>
#include <utility>
#include <vector>

#include "batch_plan.hpp"
#include "request_batch.hpp"
#include "server_stats.hpp"

namespace service {

/// Turns requests from many connections into pipeline iterations. A batch is sealed when it
/// holds `max_batch` requests or `window` after its first request arrived, whichever comes
/// first, and submitted with swp::async_submit, one submit at a time so that batches enter
/// the pipeline in the order they were sealed.
///
/// Back-pressure: a submit waits while the pipeline's inbox is full (fill_submissions'
/// capacity); sealed batches then queue here, and once `max_waiting` wait, may_read() parks
/// the connections that ask, which stop reading their sockets (TCP flow control then slows
/// their clients) until a submit completes and makes room. Requests in the server are thus
/// bounded: max_batch × (depth + capacity + 1 submitting + max_waiting + 1 forming), plus
/// what each connection read in its last read.
///
/// Closing (close()): the forming batch is sealed, every batch sealed is still submitted, and
/// after the last one the pipeline's submissions are closed, so its run ends once all of them
/// retired; requests that arrive afterwards are not taken (add() returns fewer), for the
/// caller to reject. All members are thread-safe; callbacks run without the lock held.
class MicroBatcher {
 public:
  struct Options {
    std::size_t max_batch = 256;
    std::chrono::microseconds window{1000};
    std::size_t max_waiting = 2;
    std::uint64_t max_requests = 0;  ///< 0: no limit; past it requests are not taken
  };

  MicroBatcher(boost::asio::any_io_executor executor, swp::Pipeline<BatchCtx>& pipe,
               Options options, ServerStats& stats)
      : pipe_(pipe), options_(options), stats_(stats), timer_(std::move(executor)) {}
  MicroBatcher(const MicroBatcher&) = delete;
  MicroBatcher& operator=(const MicroBatcher&) = delete;

  /// Called once, on the thread whose add() took the max_requests-th request.
  void on_limit(std::function<void()> callback) { on_limit_ = std::move(callback); }

  /// Takes copies of `bodies` (request bodies, in arrival order) from `session` into the
  /// forming batch, and returns how many it took: a prefix, all of them unless closing or
  /// past max_requests. The caller answers the others Status::rejected.
  std::size_t add(const std::shared_ptr<Session>& session,
                  std::span<const std::span<const std::byte>> bodies) {
    std::size_t taken = 0;
    bool sealed = false;
    bool limit_reached = false;
    {
      std::lock_guard lock(mutex_);
      for (std::span<const std::byte> body : bodies) {
        if (closing_ || (options_.max_requests != 0 && admitted_ >= options_.max_requests)) break;
        if (forming_.empty()) open_locked();
        forming_.add(session, body);
        ++taken;
        limit_reached = ++admitted_ == options_.max_requests;
        if (forming_.size() >= options_.max_batch) {
          seal_locked();
          sealed = true;
        }
      }
      // Counted before the lock goes: from then on the batch may be answered (settled).
      stats_.admit(taken);
    }
    if (sealed) pump();
    if (limit_reached && on_limit_) on_limit_();
    return taken;
  }

  /// Whether a connection may read its socket again now. False under back-pressure: then
  /// `resume` is kept and called (on the thread of the submit that made room, or of close())
  /// once the connection may read again.
  bool may_read(std::function<void()> resume) {
    {
      std::lock_guard lock(mutex_);
      if (closing_ || ready_.size() < options_.max_waiting) return true;
      parked_.push_back(std::move(resume));
    }
    ServerStats::add(stats_.read_pauses);
    return false;
  }

  /// Starts closing (see the class comment); any thread, more than once.
  void close() {
    std::vector<std::function<void()>> parked;
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      closing_ = true;
      if (!forming_.empty()) seal_locked();
      timer_.cancel();  // the io_context must run out of work once everything ended
      parked.swap(parked_);
    }
    for (auto& resume : parked) resume();
    pump();
  }

 private:
  // The first request of a batch: its window starts.
  void open_locked() {
    const std::uint64_t generation = ++generation_;
    timer_.expires_after(options_.window);  // cancels the last batch's wait, if it was sealed full
    timer_.async_wait([this, generation](const boost::system::error_code&) {
      {
        std::lock_guard lock(mutex_);
        if (generation != generation_ || forming_.empty()) return;  // sealed full meanwhile
        seal_locked();
      }
      pump();
    });
  }

  void seal_locked() {
    forming_.times.sealed = TraceClock::now();
    ready_.push_back(std::move(forming_));
    forming_ = RequestBatch{};
    forming_.items.reserve(options_.max_batch);
  }

  // Submits the oldest sealed batch unless a submit is under way; after the last batch of a
  // closing batcher, closes the submissions.
  void pump() {
    RequestBatch batch;
    {
      std::lock_guard lock(mutex_);
      if (submitting_ != 0) return;
      if (ready_.empty()) {
        if (!closing_ || submissions_closed_) return;
        submissions_closed_ = true;
      } else {
        batch = std::move(ready_.front());
        ready_.pop_front();
        submitting_ = batch.size();
      }
    }
    if (batch.empty()) {
      pipe_.close_submissions();
      return;
    }
    // Outside the lock: the submit may hand the batch straight to the pipeline's waiting
    // source, which admits it on this thread.
    batch.times.submitted = TraceClock::now();
    swp::async_submit(pipe_, std::move(batch),
                      [this](std::exception_ptr error) { submitted(error); });
  }

  void submitted(const std::exception_ptr& error) {
    std::vector<std::function<void()>> parked;
    {
      std::lock_guard lock(mutex_);
      if (error) {
        ServerStats::add(stats_.lost, submitting_);
        stats_.settle(submitting_);
      }
      submitting_ = 0;
      if (ready_.size() < options_.max_waiting) parked.swap(parked_);
    }
    if (error) {
      // The batch went with the operation (async_submit owns it and destroys a refused one),
      // so its requests cannot be answered: say so loudly. Not reachable while only close()
      // closes.
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::cerr << "error: a batch could not be submitted: " << e.what() << '\n';
      }
    }
    for (auto& resume : parked) resume();
    pump();
  }

  swp::Pipeline<BatchCtx>& pipe_;
  const Options options_;
  ServerStats& stats_;
  std::function<void()> on_limit_;
  std::mutex mutex_;
  boost::asio::steady_timer timer_;  // the forming batch's window; used under mutex_ only
  std::uint64_t generation_ = 0;     // of the forming batch, so a stale window is ignored
  RequestBatch forming_;
  std::deque<RequestBatch> ready_;  // sealed, not yet submitted
  std::size_t submitting_ = 0;      // requests in the submit under way (0: none)
  std::vector<std::function<void()>> parked_;
  std::uint64_t admitted_ = 0;
  bool closing_ = false;
  bool submissions_closed_ = false;
};

}  // namespace service
