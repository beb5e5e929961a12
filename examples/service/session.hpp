#pragma once
// Session: one client connection of the micro-batch server — reads request frames into the
// batcher, writes the answers back.

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "micro_batcher.hpp"
#include "protocol.hpp"
#include "server_stats.hpp"

namespace service {

/// What one connection may hold of the server, and for how long (ServerOptions has the same
/// three, documented there).
struct SessionLimits {
  /// Bytes of answers queued for writing above which the session stops reading its client.
  std::size_t max_unwritten = 64 * 1024;
  /// A connection that moved no byte either way for this long is closed; 0: never.
  std::chrono::milliseconds idle_timeout{60'000};
  /// A frame begun must be whole within this long; 0: no deadline.
  std::chrono::milliseconds frame_timeout{10'000};
};

/// A connection. Its socket's executor is a strand: reads, writes and closing run there, one
/// at a time. answer() is called from any thread (the pipeline's driver), so the outgoing
/// buffer has a mutex; answers that arrive while a write is under way are coalesced into the
/// next write.
///
/// Reading: every frame read whole goes to the batcher (one lock per read, however many frames
/// it held); frames it does not take (closing) are answered Status::rejected at once. A frame
/// whose size is out of range is a protocol error: the connection closes. The session issues
/// no read while either holds:
/// - the batcher parks it (the server's back-pressure), until the batcher resumes it;
/// - its answers not yet written exceed `max_unwritten` bytes (its client reads slower than it
///   sends, or not at all), until a write brings them back under it. TCP flow control then
///   stops that client, and its memory in the server stays within about `max_unwritten` plus
///   the answers of requests already in the pipeline.
///
/// Deadlines (check_deadlines(), called by the server's sweep): the connection is closed when
/// its client let `frame_timeout` pass between a frame's first byte and its last (a slowloris,
/// or a half-sent frame), or moved no byte either way for `idle_timeout` — neither read
/// from nor written to: an idle client, or one that does not read its answers. Neither clock
/// runs against the client while the server itself holds it up: while the batcher parks the
/// session, or while requests of it are in the pipeline (its answers are the server's to
/// give). A deadline closes the connection when two checks in a row find the same one passed
/// (the same frame still not whole, or no byte moved since): after the server's threads
/// stalled past a deadline, the first check may run before the read of what the client sent
/// meanwhile (its bytes still in the kernel, or its completion queued behind the check); by the
/// next check, a quarter of the timeout later, it ran. Each close is counted
/// (ServerStats::frame_timeouts, idle_timeouts).
///
/// A client that disconnects (end of file or an error on its socket) closes the session; the
/// answers still due to it are dropped when they come (ServerStats::dropped), and the requests
/// stay in the pipeline as any other: nothing waits for that client.
class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using OnClosed = std::function<void(const std::shared_ptr<Session>&)>;
  using Clock = std::chrono::steady_clock;

  /// A session on `socket`, whose executor must be a strand (or a one-thread context).
  /// `on_closed` is called once, on the strand, when the socket closed.
  Session(Socket socket, MicroBatcher& batcher, ServerStats& stats, SessionLimits limits,
          OnClosed on_closed)
      : socket_(std::move(socket)),
        batcher_(batcher),
        stats_(stats),
        limits_(limits),
        on_closed_(std::move(on_closed)),
        in_(16 * 1024) {}

  /// Starts reading.
  void start() {
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->progressed();
      self->read_more();
    });
  }

  /// Closes the connection if its client let a deadline pass (see the class comment); any
  /// thread. Cheap when none passed: a few relaxed loads, nothing posted.
  void check_deadlines(Clock::time_point now) {
    if (!deadline_passed(now)) return;
    boost::asio::post(socket_.get_executor(),
                      [self = shared_from_this(), now] { self->expire(now); });
  }

  /// Queues `responses` (whole responses, response_size bytes each) for writing; any thread.
  /// Dropped, and counted, when the connection is closed.
  void answer(std::span<const std::byte> responses) {
    const std::size_t n = responses.size() / response_size;
    // Owed no more once handed over, whether written or dropped (relaxed: a count the
    // deadline check reads, ordering nothing else).
    owed_.fetch_sub(static_cast<std::int64_t>(n), std::memory_order_relaxed);
    {
      std::lock_guard lock(out_mutex_);
      if (closed_) {
        ServerStats::add(stats_.dropped, n);
        return;
      }
      pending_.insert(pending_.end(), responses.begin(), responses.end());
      unwritten_ += responses.size();
      stats_.note_unwritten(unwritten_);
      if (writing_) return;  // the write under way takes them next
      writing_ = true;
    }
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->flush(); });
  }

  /// Closes the connection once the answers queued so far are written (at shutdown, after the
  /// pipeline's run ended); any thread.
  void close_when_flushed() {
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      bool idle = false;
      {
        std::lock_guard lock(self->out_mutex_);
        idle = !self->writing_;
      }
      if (idle) self->shut();
    });
  }

  /// Closes the connection now; answers not written yet are dropped. Any thread.
  void close() {
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->shut(); });
  }

 private:
  static std::int64_t ticks(Clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static std::int64_t ticks(std::chrono::milliseconds d) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }

  // A byte moved (or the server stopped holding the client up): the idle clock restarts.
  void progressed() { last_progress_.store(ticks(Clock::now()), std::memory_order_relaxed); }

  // Whether a deadline may have passed, from the atomics alone (any thread); expire() decides.
  [[nodiscard]] bool deadline_passed(Clock::time_point now) const noexcept {
    const std::int64_t t = ticks(now);
    const std::int64_t begun = frame_begun_.load(std::memory_order_relaxed);
    if (limits_.frame_timeout.count() > 0 && begun != 0 &&
        t - begun >= ticks(limits_.frame_timeout))
      return true;
    return limits_.idle_timeout.count() > 0 &&
           t - last_progress_.load(std::memory_order_relaxed) >= ticks(limits_.idle_timeout);
  }

  // On the strand: closes the connection if a deadline passed, and had passed at the check
  // before too (see the class comment), and the client, not the server, is what holds it up.
  void expire(Clock::time_point now) {
    if (shut_ || parked_ || owed_.load(std::memory_order_relaxed) > 0) {
      seen_late_frame_ = seen_idle_since_ = 0;
      return;
    }
    const std::int64_t t = ticks(now);
    const std::int64_t begun = frame_begun_.load(std::memory_order_relaxed);
    const std::int64_t since = last_progress_.load(std::memory_order_relaxed);
    // While reads pause for unwritten answers, the frame cannot advance: only idleness counts.
    const bool frame_late = !write_paused_ && limits_.frame_timeout.count() > 0 && begun != 0 &&
                            t - begun >= ticks(limits_.frame_timeout);
    const bool idle = limits_.idle_timeout.count() > 0 && t - since >= ticks(limits_.idle_timeout);
    // The same deadline at the check before: the same frame still not whole, or no byte moved
    // since. (A read that ran in between completed the frame or moved the idle clock.)
    const bool frame_confirmed = frame_late && seen_late_frame_ == begun;
    const bool idle_confirmed = idle && seen_idle_since_ == since;
    seen_late_frame_ = frame_late ? begun : 0;
    seen_idle_since_ = idle ? since : 0;
    if (!frame_confirmed && !idle_confirmed) return;
    ServerStats::add(frame_confirmed ? stats_.frame_timeouts : stats_.idle_timeouts);
    shut();
  }

  // The server stopped holding the client up: a frame it was sending restarts its clock.
  void resumed() {
    progressed();
    if (frame_begun_.load(std::memory_order_relaxed) != 0)
      frame_begun_.store(ticks(Clock::now()), std::memory_order_relaxed);
  }

  std::size_t unwritten() {
    std::lock_guard lock(out_mutex_);
    return unwritten_;
  }

  // Reads again unless a pause applies (see the class comment); on the strand, with no read
  // under way.
  void read_more() {
    if (shut_) return;
    if (unwritten() > limits_.max_unwritten) {
      write_paused_ = true;  // written() resumes once the answers are back under the bound
      ServerStats::add(stats_.write_pauses);
      return;
    }
    auto resume = [self = shared_from_this()] {
      boost::asio::post(self->socket_.get_executor(), [self] {
        self->parked_ = false;
        self->resumed();
        self->read_more();
      });
    };
    if (!batcher_.may_read(std::move(resume))) {
      parked_ = true;
      return;
    }
    read();
  }

  void read() {
    if (shut_) return;
    socket_.async_read_some(
        boost::asio::buffer(in_.data() + have_, in_.size() - have_),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          self->on_read(error, n);
        });
  }

  void on_read(const boost::system::error_code& error, std::size_t n) {
    if (error) {  // end of file or reset: the client left
      shut();
      return;
    }
    progressed();
    have_ += n;
    bodies_.clear();
    std::size_t pos = 0;
    while (have_ - pos >= frame_prefix) {
      const std::uint32_t size = load_u32(in_.data() + pos);
      if (size < request_header || size > max_body) {
        ServerStats::add(stats_.protocol_errors);
        shut();
        return;
      }
      if (have_ - pos - frame_prefix < size) break;
      bodies_.emplace_back(in_.data() + pos + frame_prefix, size);
      pos += frame_prefix + size;
    }
    if (!bodies_.empty()) {
      // Owed before the batcher has them: their answers may come before add() returns.
      owed_.fetch_add(static_cast<std::int64_t>(bodies_.size()), std::memory_order_relaxed);
      const std::size_t taken = batcher_.add(shared_from_this(), bodies_);
      if (taken < bodies_.size()) reject(std::span(bodies_).subspan(taken));
    }
    // Keep the start of an incomplete frame, with room for all of it.
    std::memmove(in_.data(), in_.data() + pos, have_ - pos);
    have_ -= pos;
    if (have_ >= frame_prefix) {
      const std::size_t need = frame_prefix + load_u32(in_.data());
      if (need > in_.size()) in_.resize(need);
    }
    // The frame's clock starts at its first byte: the one left over began in this read when
    // a frame before it ended here, or when nothing was left over before.
    if (have_ == 0)
      frame_begun_.store(0, std::memory_order_relaxed);
    else if (pos > 0 || frame_begun_.load(std::memory_order_relaxed) == 0)
      frame_begun_.store(ticks(Clock::now()), std::memory_order_relaxed);
    read_more();
  }

  void reject(std::span<const std::span<const std::byte>> bodies) {
    std::vector<std::byte> responses(bodies.size() * response_size);
    for (std::size_t i = 0; i < bodies.size(); ++i)
      write_response(responses.data() + i * response_size,
                     {parse_request_header(bodies[i]).id, Status::rejected, 0});
    ServerStats::add(stats_.rejected, bodies.size());
    answer(responses);
  }

  // Writes what answer() queued, as one write; on the strand.
  void flush() {
    {
      std::lock_guard lock(out_mutex_);
      if (closed_) return;
      out_.swap(pending_);
      pending_.clear();
    }
    boost::asio::async_write(socket_, boost::asio::buffer(out_),
                             [self = shared_from_this()](const boost::system::error_code& error,
                                                         std::size_t) { self->written(error); });
  }

  void written(const boost::system::error_code& error) {
    const std::size_t n = out_.size() / response_size;
    const std::size_t bytes = out_.size();
    out_.clear();
    if (error) {
      ServerStats::add(stats_.dropped, n);
      shut();
      return;
    }
    progressed();
    ServerStats::add(stats_.delivered, n);
    bool more = false;
    std::size_t left = 0;
    {
      std::lock_guard lock(out_mutex_);
      unwritten_ -= bytes;
      left = unwritten_;
      more = !pending_.empty();
      writing_ = more;
    }
    if (write_paused_ && left <= limits_.max_unwritten) {
      write_paused_ = false;
      resumed();
      read_more();
    }
    if (more) {
      flush();
    } else if (closing_) {
      shut();
    }
  }

  // Closes the socket (a read or write under way completes with an error); on the strand.
  void shut() {
    if (shut_) return;
    shut_ = true;
    {
      std::lock_guard lock(out_mutex_);
      closed_ = true;
      ServerStats::add(stats_.dropped, pending_.size() / response_size);
      unwritten_ -= pending_.size();  // the write under way, if any, takes its own off
      pending_.clear();
    }
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    on_closed_(shared_from_this());
  }

  Socket socket_;
  MicroBatcher& batcher_;
  ServerStats& stats_;
  const SessionLimits limits_;
  OnClosed on_closed_;
  // Strand only:
  std::vector<std::byte> in_;  // bytes read, the unparsed ones at the front
  std::size_t have_ = 0;
  std::vector<std::span<const std::byte>> bodies_;  // the frames of one read
  std::vector<std::byte> out_;                      // the write under way
  bool closing_ = false;
  bool shut_ = false;
  bool parked_ = false;        // the batcher holds the next read back
  bool write_paused_ = false;  // the unwritten answers hold the next read back
  // What the last deadline check found passed (see expire; 0: nothing): the late frame's
  // first byte, the idle clock's start.
  std::int64_t seen_late_frame_ = 0;
  std::int64_t seen_idle_since_ = 0;
  // Written on the strand, read by check_deadlines() from the server's sweep (relaxed: each is
  // a clock reading or a count on its own; expire() decides again on the strand):
  std::atomic<std::int64_t> last_progress_{0};  // steady-clock ns of the last byte moved
  std::atomic<std::int64_t> frame_begun_{0};    // of the incomplete frame's first byte; 0: none
  std::atomic<std::int64_t> owed_{0};           // requests read whole, not handed to answer()
  // Any thread, under out_mutex_:
  std::mutex out_mutex_;
  std::vector<std::byte> pending_;  // answers queued behind the write under way
  std::size_t unwritten_ = 0;       // bytes of answers not written yet: pending_ and out_
  bool writing_ = false;            // a flush is posted or a write is under way
  bool closed_ = false;
};

}  // namespace service
