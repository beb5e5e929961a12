#pragma once
// LoadConnection: one client connection of the load generator — queues request frames,
// reads responses with the time the kernel received them.

#include <sys/socket.h>
#include <time.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "protocol.hpp"

namespace service {

/// A connection on a one-thread io_context (no locks: everything runs on that thread).
/// Frames sent before the connection is established, or while a write is under way, are
/// coalesced into the next write. Each response read is handed to `on_response` with the time
/// it arrived; the end of the connection (an error, end of file, or close()) to `on_end` once.
///
/// Arrival times are the kernel's (SO_TIMESTAMPNS: when the segment was queued on the
/// socket), not when this thread got round to reading it: the generator shares two cores with
/// the server, and a wait of its own for a core would otherwise be charged to the server. A
/// read that returns several segments carries the last one's time, which is then given to
/// every response in it (never earlier than any of them arrived: latencies err long).
class LoadConnection : public std::enable_shared_from_this<LoadConnection> {
 public:
  using Clock = std::chrono::steady_clock;
  using OnResponse = std::function<void(const Response&, Clock::time_point arrived)>;
  using OnEnd = std::function<void(const boost::system::error_code&)>;

  LoadConnection(boost::asio::io_context& io, OnResponse on_response, OnEnd on_end = {})
      : socket_(io),
        on_response_(std::move(on_response)),
        on_end_(std::move(on_end)),
        in_(64 * 1024) {}

  /// Connects; `connected` is called with the outcome (after which frames flow).
  void connect(const boost::asio::ip::tcp::endpoint& endpoint,
               std::function<void(const boost::system::error_code&)> connected = {}) {
    socket_.async_connect(endpoint, [self = shared_from_this(), connected = std::move(connected)](
                                        const boost::system::error_code& error) {
      if (!error) {
        boost::system::error_code ignored;
        self->socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        const int on = 1;
        ::setsockopt(self->socket_.native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
        self->connected_ = true;
        self->read();
        self->flush();
      } else {
        self->end(error);
      }
      if (connected) connected(error);
    });
  }

  /// Queues the frame of request `id` and writes it (with whatever else is queued).
  void send_request(std::uint64_t id, std::uint32_t rounds, std::span<const std::byte> payload) {
    queue_request(id, rounds, payload);
    flush();
  }

  /// Queues the frame of request `id` without writing yet: frames queued together leave in
  /// one write at the next flush() (one system call for several requests).
  void queue_request(std::uint64_t id, std::uint32_t rounds, std::span<const std::byte> payload) {
    append_request(pending_, id, rounds, payload);
  }

  /// Writes what is queued, unless a write is under way (which then takes it next).
  void flush() {
    if (!connected_ || writing_ || ended_) return;
    if (pending_.empty()) {
      if (close_pending_) close_now();
      return;
    }
    out_.swap(pending_);
    pending_.clear();
    writing_ = true;
    boost::asio::async_write(
        socket_, boost::asio::buffer(out_),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
          self->writing_ = false;
          self->out_.clear();
          if (error) {
            self->end(error);
            return;
          }
          self->flush();
        });
  }

  /// Queues raw bytes (the prefix of a frame, to cut a request short).
  void send_bytes(std::span<const std::byte> bytes) {
    pending_.insert(pending_.end(), bytes.begin(), bytes.end());
    flush();
  }

  /// Closes once everything queued is written: with a FIN, or with a reset (SO_LINGER 0) when
  /// `abortive`, as a crashing client would.
  void close_after_send(bool abortive = false) {
    close_pending_ = true;
    abortive_ = abortive;
    if (connected_ && !writing_ && pending_.empty()) close_now();
  }

  /// Closes now.
  void close() { close_now(); }

  [[nodiscard]] bool ended() const noexcept { return ended_; }

 private:
  // Waits until the socket is readable, then reads what is there with recvmsg (Asio's reads
  // do not return control messages, which carry the kernel's timestamp).
  void read() {
    socket_.async_wait(boost::asio::ip::tcp::socket::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& error) {
                         if (error) {
                           self->end(error);
                           return;
                         }
                         self->read_available();
                       });
  }

  void read_available() {
    for (;;) {
      if (have_ == in_.size()) in_.resize(in_.size() * 2);
      iovec iov{in_.data() + have_, in_.size() - have_};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(socket_.native_handle(), &msg, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        end(n == 0 ? boost::asio::error::eof
                   : boost::system::error_code(errno, boost::system::system_category()));
        return;
      }
      const Clock::time_point arrived = arrival(msg);
      have_ += static_cast<std::size_t>(n);
      std::size_t pos = 0;
      for (; have_ - pos >= response_size; pos += response_size)
        on_response_(read_response(in_.data() + pos), arrived);
      std::memmove(in_.data(), in_.data() + pos, have_ - pos);
      have_ -= pos;
      if (ended_) return;
    }
    read();
  }

  // The kernel's receive time of `msg`, on the steady clock (it stamps CLOCK_REALTIME: the
  // offset between the two clocks is read now); now when it gave none.
  static Clock::time_point arrival(msghdr& msg) {
    const auto steady_now = Clock::now();
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
      timespec stamp;
      std::memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
      timespec real_now;
      ::clock_gettime(CLOCK_REALTIME, &real_now);
      const auto behind = std::chrono::seconds(real_now.tv_sec - stamp.tv_sec) +
                          std::chrono::nanoseconds(real_now.tv_nsec - stamp.tv_nsec);
      if (behind.count() < 0) return steady_now;  // the clock was stepped: do not guess
      return steady_now - std::chrono::duration_cast<Clock::duration>(behind);
    }
    return steady_now;
  }

  void close_now() {
    if (ended_) return;
    boost::system::error_code ignored;
    if (abortive_) socket_.set_option(boost::asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
    end({});
  }

  void end(const boost::system::error_code& error) {
    if (ended_) return;
    ended_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (on_end_) on_end_(error);
  }

  boost::asio::ip::tcp::socket socket_;
  OnResponse on_response_;
  OnEnd on_end_;
  std::vector<std::byte> in_;
  std::size_t have_ = 0;
  std::vector<std::byte> pending_;
  std::vector<std::byte> out_;
  bool connected_ = false;
  bool writing_ = false;
  bool close_pending_ = false;
  bool abortive_ = false;
  bool ended_ = false;
};

}  // namespace service
