#pragma once
// RawSocket: a client connection on a plain non-blocking socket, for the hostile-client test
// (service_hostile), whose clients misbehave on purpose: they stop reading, send half a frame,
// or nothing at all, which the load generator's Asio connections are not made to do.

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "protocol.hpp"

namespace service {

/// One connection to 127.0.0.1, non-blocking, closed on destruction. Every call returns at
/// once or within the wait it is given.
class RawSocket {
 public:
  using Clock = std::chrono::steady_clock;

  RawSocket() = default;
  RawSocket(RawSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  RawSocket& operator=(RawSocket&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  ~RawSocket() { close(); }

  /// Connects to 127.0.0.1:`port` within `wait`; an empty socket when it cannot (no
  /// descriptor left, refused, or no answer to the handshake in time).
  static RawSocket connect(std::uint16_t port, std::chrono::milliseconds wait) {
    RawSocket s;
    s.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd_ < 0) return s;
    const int one = 1;
    ::setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    if (errno != EINPROGRESS || !s.wait_for(POLLOUT, wait)) {
      s.close();
      return s;
    }
    int error = 0;
    socklen_t len = sizeof error;
    if (::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) s.close();
    return s;
  }

  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  [[nodiscard]] int fd() const noexcept { return fd_; }

  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// Whether `events` (POLLIN, POLLOUT) are ready within `wait`; an error or hang-up counts
  /// as ready (the next call tells which).
  bool wait_for(short events, std::chrono::milliseconds wait) const {
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
  }

  /// Sends what the socket takes now of `bytes`: the count sent, 0 when it is full, nothing
  /// when the connection broke (the server closed it).
  std::optional<std::size_t> send_some(std::span<const std::byte> bytes) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    return std::nullopt;
  }

  /// Sends all of `bytes` within `wait`; false when the connection broke or stayed full.
  bool send_all(std::span<const std::byte> bytes, std::chrono::milliseconds wait) {
    const auto until = Clock::now() + wait;
    while (!bytes.empty()) {
      const auto sent = send_some(bytes);
      if (!sent) return false;
      bytes = bytes.subspan(*sent);
      if (bytes.empty()) break;
      if (Clock::now() >= until || !wait_for(POLLOUT, remaining(until))) return false;
    }
    return true;
  }

  /// Reads what is there into `out`: the count read, 0 at end of file or on a reset (the
  /// server closed the connection), nothing when there is nothing to read now.
  std::optional<std::size_t> receive_some(std::span<std::byte> out) {
    const ssize_t n = ::recv(fd_, out.data(), out.size(), MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return std::nullopt;
    return 0;
  }

  /// How the server ended a connection of a hostile client.
  enum class End {
    refused,     ///< it answered Status::busy first (the connection cap), then closed it
    closed,      ///< it closed it (end of file or a reset), perhaps after some answers
    unanswered,  ///< neither happened within the wait
  };

  /// Reads (and discards) until the server closes the connection or `wait` passed.
  End await_end(std::chrono::milliseconds wait) {
    const auto until = Clock::now() + wait;
    std::byte first[response_size];
    std::size_t have = 0;
    for (;;) {
      std::byte buf[4096];
      const auto n = receive_some(buf);
      if (n && *n == 0)
        return have == response_size && read_response(first).status == Status::busy ? End::refused
                                                                                    : End::closed;
      if (n) {
        for (std::size_t i = 0; i < *n && have < response_size; ++i) first[have++] = buf[i];
        continue;
      }
      if (Clock::now() >= until || !wait_for(POLLIN, remaining(until))) return End::unanswered;
    }
  }

 private:
  static std::chrono::milliseconds remaining(Clock::time_point until) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  }

  int fd_ = -1;
};

}  // namespace service
