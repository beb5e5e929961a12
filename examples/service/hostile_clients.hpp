#pragma once
// The hostile clients of service_hostile: each kind runs on a thread of its own until a given
// time and reports what the server did to it. Loopback only; every wait is bounded.

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "protocol.hpp"
#include "raw_socket.hpp"

namespace service {

using HostileClock = std::chrono::steady_clock;

/// How the connections of one kind ended.
struct Ends {
  std::uint64_t opened = 0;
  std::uint64_t refused = 0;        ///< answered Status::busy (the connection cap)
  std::uint64_t closed = 0;         ///< closed by the server, as this kind should be
  std::uint64_t unanswered = 0;     ///< neither, within the wait: what must not happen
  std::uint64_t no_connection = 0;  ///< connect() failed (the client's own descriptors)

  void add(RawSocket::End end) {
    switch (end) {
      case RawSocket::End::refused:
        ++refused;
        break;
      case RawSocket::End::closed:
        ++closed;
        break;
      case RawSocket::End::unanswered:
        ++unanswered;
        break;
    }
  }
};

/// Clients that send requests as fast as the server takes them and never read an answer.
/// When the server closes one (its idle timeout: no answer written for that long), another
/// takes its place. `closed` counts those the server closed.
class NonReaders {
 public:
  NonReaders(std::uint16_t port, std::size_t count) : port_(port), count_(count) {
    // A whole number of frames, sent round and round: the stream stays frame-aligned.
    const std::vector<std::byte> payload(16, std::byte{0x5a});
    for (std::uint64_t id = 0; id < 4096; ++id) append_request(frames_, id, 1, payload);
  }

  Ends run(HostileClock::time_point end) {
    std::vector<Sender> senders(count_);
    while (HostileClock::now() < end) {
      std::vector<pollfd> polls;
      for (auto& s : senders) {
        if (!s.socket.is_open()) open(s);
        if (s.socket.is_open()) polls.push_back({s.socket.fd(), POLLOUT, 0});
      }
      if (polls.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      ::poll(polls.data(), polls.size(), 50);
      for (auto& s : senders)
        if (s.socket.is_open()) send(s);
    }
    return ends_;
  }

  /// Bytes of requests the server took from them.
  [[nodiscard]] std::uint64_t bytes_sent() const noexcept { return bytes_; }

 private:
  struct Sender {
    RawSocket socket;
    std::size_t at = 0;  // in frames_
  };

  void open(Sender& s) {
    s.socket = RawSocket::connect(port_, std::chrono::seconds(2));
    s.at = 0;
    if (s.socket.is_open())
      ++ends_.opened;
    else
      ++ends_.no_connection;
  }

  void send(Sender& s) {
    for (;;) {
      const auto sent = s.socket.send_some(std::span(frames_).subspan(s.at));
      if (!sent) {  // the server closed it (or refused it, at the cap)
        ++ends_.closed;
        s.socket.close();
        return;
      }
      if (*sent == 0) return;
      bytes_ += *sent;
      s.at = (s.at + *sent) % frames_.size();
    }
  }

  std::uint16_t port_;
  std::size_t count_;
  std::vector<std::byte> frames_;
  Ends ends_;
  std::uint64_t bytes_ = 0;
};

/// Waves of connections that send nothing: `per_wave` at once (more than the server's cap),
/// every `every`. Each must be refused at once (Status::busy) or accepted and, having sent
/// nothing, closed by the idle timeout; `unanswered` counts those left hanging past
/// `idle_timeout` + `slack`. After each wave a fresh client must be served (`probes_failed`
/// counts those that were not): the server still accepts.
class IdleFlood {
 public:
  IdleFlood(std::uint16_t port, std::size_t per_wave, std::chrono::milliseconds every,
            std::chrono::milliseconds idle_timeout, std::chrono::milliseconds slack)
      : port_(port), per_wave_(per_wave), every_(every), idle_(idle_timeout), slack_(slack) {}

  Ends run(HostileClock::time_point end) {
    for (auto wave = HostileClock::now(); wave < end; wave += every_) {
      std::this_thread::sleep_until(wave);
      run_wave();
      ++waves_;
      if (!probe()) ++probes_failed_;
    }
    return ends_;
  }

  [[nodiscard]] std::uint64_t waves() const noexcept { return waves_; }
  [[nodiscard]] std::uint64_t probes_failed() const noexcept { return probes_failed_; }

 private:
  void run_wave() {
    std::vector<RawSocket> sockets;
    for (std::size_t i = 0; i < per_wave_; ++i) {
      RawSocket s = RawSocket::connect(port_, std::chrono::seconds(2));
      if (!s.is_open()) {
        ++ends_.no_connection;
        continue;
      }
      ++ends_.opened;
      sockets.push_back(std::move(s));
    }
    // Each ends within the idle timeout and the slack, or is unanswered.
    const auto until = HostileClock::now() + idle_ + slack_;
    for (auto& s : sockets) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - HostileClock::now());
      ends_.add(s.await_end(std::max(left, std::chrono::milliseconds(0))));
    }
  }

  // A new connection gets its request answered, after retries while the cap is still full.
  bool probe() {
    const auto until = HostileClock::now() + idle_ + slack_;
    std::vector<std::byte> frame;
    const std::vector<std::byte> payload(32, std::byte{7});
    append_request(frame, 1, 1, payload);
    while (HostileClock::now() < until) {
      RawSocket s = RawSocket::connect(port_, std::chrono::seconds(2));
      if (s.is_open() && s.send_all(frame, std::chrono::seconds(2))) {
        std::byte answer[response_size];
        std::size_t have = 0;
        while (have < response_size && s.wait_for(POLLIN, std::chrono::seconds(2))) {
          const auto n = s.receive_some(std::span(answer).subspan(have));
          if (n && *n == 0) break;
          if (n) have += *n;
        }
        if (have == response_size) {
          const Response r = read_response(answer);
          if (r.status == Status::ok && r.result == answer_of(1, digest(payload, 1))) return true;
          if (r.status != Status::busy) return false;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::uint16_t port_;
  std::size_t per_wave_;
  std::chrono::milliseconds every_, idle_, slack_;
  Ends ends_;
  std::uint64_t waves_ = 0;
  std::uint64_t probes_failed_ = 0;
};

/// One malformed frame per connection, a connection every `every`: a body size below the
/// request header (0, 11), above the protocol's limit, 2^32 − 1, and a valid request followed
/// by a size of 5. The server must close each (a protocol error) or refuse it at its cap,
/// within `wait`.
class MalformedFrames {
 public:
  MalformedFrames(std::uint16_t port, std::chrono::milliseconds every,
                  std::chrono::milliseconds wait)
      : port_(port), every_(every), wait_(wait) {}

  Ends run(HostileClock::time_point end) {
    for (std::uint64_t k = 0; HostileClock::now() < end; ++k) {
      RawSocket s = RawSocket::connect(port_, std::chrono::seconds(2));
      if (!s.is_open()) {
        ++ends_.no_connection;
      } else {
        ++ends_.opened;
        const auto frame = malformed(k);
        ends_.add(s.send_all(frame, std::chrono::seconds(2)) ? s.await_end(wait_)
                                                             : RawSocket::End::closed);
      }
      std::this_thread::sleep_for(every_);
    }
    return ends_;
  }

 private:
  static std::vector<std::byte> malformed(std::uint64_t k) {
    std::vector<std::byte> frame;
    const auto size_only = [&](std::uint32_t size) {
      frame.resize(frame_prefix + 8, std::byte{0});
      store_u32(frame.data(), size);
    };
    switch (k % 5) {
      case 0:
        size_only(0);
        break;
      case 1:
        size_only(static_cast<std::uint32_t>(request_header - 1));
        break;
      case 2:
        size_only(static_cast<std::uint32_t>(max_body + 1));
        break;
      case 3:
        size_only(0xffffffffU);
        break;
      default: {
        const std::vector<std::byte> payload(8, std::byte{1});
        append_request(frame, k, 1, payload);
        const std::size_t at = frame.size();
        frame.resize(at + frame_prefix + 5, std::byte{0});
        store_u32(frame.data() + at, 5);
      }
    }
    return frame;
  }

  std::uint16_t port_;
  std::chrono::milliseconds every_, wait_;
  Ends ends_;
};

/// Clients that begin a frame and do not finish it, one more every `every`, in turn: half a
/// header then nothing; a header and half the body then nothing; and a slowloris sending a
/// frame a byte every `byte_every` (which keeps it from going idle). Each must be closed by
/// the server (its frame timeout) or refused at the cap within `wait` of its start.
class SlowClients {
 public:
  SlowClients(std::uint16_t port, std::chrono::milliseconds every,
              std::chrono::milliseconds byte_every, std::chrono::milliseconds wait)
      : port_(port), every_(every), byte_every_(byte_every), wait_(wait) {
    const std::vector<std::byte> payload(100, std::byte{3});
    append_request(frame_, 9, 1, payload);
  }

  Ends run(HostileClock::time_point end) {
    std::deque<Slow> slow;
    auto next_start = HostileClock::now();
    for (std::uint64_t k = 0;;) {
      const auto now = HostileClock::now();
      if (now >= end && slow.empty()) break;
      if (now < end && now >= next_start) {
        start(slow, k++);
        next_start += every_;
      }
      step(slow);
    }
    return ends_;
  }

 private:
  struct Slow {
    RawSocket socket;
    HostileClock::time_point started;
    HostileClock::time_point next_byte;  // slowloris only
    std::size_t sent = 0;
    bool trickle = false;  // the slowloris
    std::byte first[response_size]{};
    std::size_t have = 0;
  };

  void start(std::deque<Slow>& slow, std::uint64_t k) {
    Slow s;
    s.socket = RawSocket::connect(port_, std::chrono::seconds(2));
    if (!s.socket.is_open()) {
      ++ends_.no_connection;
      return;
    }
    ++ends_.opened;
    s.started = s.next_byte = HostileClock::now();
    switch (k % 3) {
      case 0:
        s.socket.send_all(std::span(frame_).first(2), std::chrono::seconds(1));
        break;
      case 1:
        s.socket.send_all(std::span(frame_).first(frame_.size() / 2), std::chrono::seconds(1));
        break;
      default:
        s.trickle = true;
    }
    slow.push_back(std::move(s));
  }

  // Sends the slowloris' bytes that are due, and retires every connection that ended.
  void step(std::deque<Slow>& slow) {
    std::vector<pollfd> polls;
    for (auto& s : slow) polls.push_back({s.socket.fd(), POLLIN, 0});
    ::poll(polls.data(), polls.size(), 10);
    const auto now = HostileClock::now();
    for (auto& s : slow) {
      if (!s.socket.is_open()) continue;
      if (s.trickle && s.sent < frame_.size() && now >= s.next_byte) {
        if (s.socket.send_some(std::span(frame_).subspan(s.sent, 1)).value_or(0) == 1) ++s.sent;
        s.next_byte += byte_every_;
      }
      std::byte buf[256];
      if (const auto n = s.socket.receive_some(buf)) {
        for (std::size_t i = 0; i < *n && s.have < response_size; ++i) s.first[s.have++] = buf[i];
        if (*n == 0) {
          const bool busy =
              s.have == response_size && read_response(s.first).status == Status::busy;
          ends_.add(busy ? RawSocket::End::refused : RawSocket::End::closed);
          s.socket.close();
        }
      } else if (now - s.started >= wait_) {
        ends_.add(RawSocket::End::unanswered);
        s.socket.close();
      }
    }
    std::erase_if(slow, [](const Slow& s) { return !s.socket.is_open(); });
  }

  std::uint16_t port_;
  std::chrono::milliseconds every_, byte_every_, wait_;
  std::vector<std::byte> frame_;
  Ends ends_;
};

}  // namespace service
