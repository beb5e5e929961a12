#pragma once
// LoadConnection: one client connection of the load generator — queues request frames,
// reads responses.

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
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
/// coalesced into the next write. Each response read is handed to `on_response`; the end of
/// the connection (an error, end of file, or close()) to `on_end` once.
class LoadConnection : public std::enable_shared_from_this<LoadConnection> {
 public:
  using OnResponse = std::function<void(const Response&)>;
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
        self->connected_ = true;
        self->read();
        self->flush();
      } else {
        self->end(error);
      }
      if (connected) connected(error);
    });
  }

  /// Queues the frame of request `id`.
  void send_request(std::uint64_t id, std::uint32_t rounds, std::span<const std::byte> payload) {
    append_request(pending_, id, rounds, payload);
    flush();
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

  void read() {
    socket_.async_read_some(
        boost::asio::buffer(in_.data() + have_, in_.size() - have_),
        [self = shared_from_this()](const boost::system::error_code& error, std::size_t n) {
          if (error) {
            self->end(error);
            return;
          }
          self->have_ += n;
          std::size_t pos = 0;
          for (; self->have_ - pos >= response_size; pos += response_size)
            self->on_response_(read_response(self->in_.data() + pos));
          std::memmove(self->in_.data(), self->in_.data() + pos, self->have_ - pos);
          self->have_ -= pos;
          if (!self->ended_) self->read();
        });
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
