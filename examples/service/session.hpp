#pragma once
// Session: one client connection of the micro-batch server — reads request frames into the
// batcher, writes the answers back.

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
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

/// A connection. Its socket's executor is a strand: reads, writes and closing run there, one
/// at a time. answer() is called from any thread (the pipeline's driver), so the outgoing
/// buffer has a mutex; answers that arrive while a write is under way are coalesced into the
/// next write.
///
/// Reading: every frame read whole goes to the batcher (one lock per read, however many frames
/// it held); frames it does not take (closing) are answered Status::rejected at once. A frame
/// whose size is out of range is a protocol error: the connection closes. Under back-pressure
/// the batcher parks the session, which then issues no read until resumed.
/// A client that disconnects (end of file or an error on its socket) closes the session; the
/// answers still due to it are dropped when they come (ServerStats::dropped), and the requests
/// stay in the pipeline as any other: nothing waits for that client.
class Session : public std::enable_shared_from_this<Session> {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using OnClosed = std::function<void(const std::shared_ptr<Session>&)>;

  /// A session on `socket`, whose executor must be a strand (or a one-thread context).
  /// `on_closed` is called once, on the strand, when the socket closed.
  Session(Socket socket, MicroBatcher& batcher, ServerStats& stats, OnClosed on_closed)
      : socket_(std::move(socket)),
        batcher_(batcher),
        stats_(stats),
        on_closed_(std::move(on_closed)),
        in_(16 * 1024) {}

  /// Starts reading.
  void start() {
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  /// Queues `responses` (whole responses, response_size bytes each) for writing; any thread.
  /// Dropped, and counted, when the connection is closed.
  void answer(std::span<const std::byte> responses) {
    const std::size_t n = responses.size() / response_size;
    {
      std::lock_guard lock(out_mutex_);
      if (closed_) {
        ServerStats::add(stats_.dropped, n);
        return;
      }
      pending_.insert(pending_.end(), responses.begin(), responses.end());
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
    auto resume = [self = shared_from_this()] {
      boost::asio::post(self->socket_.get_executor(), [self] { self->read(); });
    };
    if (batcher_.may_read(std::move(resume))) read();
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
    out_.clear();
    if (error) {
      ServerStats::add(stats_.dropped, n);
      shut();
      return;
    }
    ServerStats::add(stats_.delivered, n);
    bool more = false;
    {
      std::lock_guard lock(out_mutex_);
      more = !pending_.empty();
      writing_ = more;
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
  OnClosed on_closed_;
  // Strand only:
  std::vector<std::byte> in_;  // bytes read, the unparsed ones at the front
  std::size_t have_ = 0;
  std::vector<std::span<const std::byte>> bodies_;  // the frames of one read
  std::vector<std::byte> out_;                      // the write under way
  bool closing_ = false;
  bool shut_ = false;
  // Any thread, under out_mutex_:
  std::mutex out_mutex_;
  std::vector<std::byte> pending_;  // answers queued behind the write under way
  bool writing_ = false;            // a flush is posted or a write is under way
  bool closed_ = false;
};

}  // namespace service
