#pragma once
// GoodClients: the well-behaved clients of the hostile-client test — every request checked,
// none may go unanswered while hostile clients work on the server.

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "protocol.hpp"
#include "raw_socket.hpp"
#include "request_pool.hpp"

namespace service {

/// What the well-behaved clients saw.
struct GoodResult {
  std::uint64_t sent = 0;
  std::uint64_t answered = 0;  ///< correct answers: the right id, status ok, the right result
  std::uint64_t wrong = 0;     ///< answers with an unknown id, another status or result
  std::uint64_t lost = 0;      ///< sent, without a correct answer by the end
  std::uint64_t broken = 0;    ///< connections the server closed or refused
};

/// `connections` connections, each keeping `outstanding` requests in flight (a closed loop)
/// until the end, then waiting for the last answers. Connected in the constructor, so that
/// they are open before the hostile clients begin. One thread (run()'s), one poll() over all.
class GoodClients {
 public:
  using Clock = std::chrono::steady_clock;

  GoodClients(std::uint16_t port, const RequestPool& pool, std::size_t connections,
              std::size_t outstanding)
      : pool_(pool), outstanding_(outstanding) {
    for (std::size_t c = 0; c < connections; ++c) {
      Connection conn;
      conn.socket = RawSocket::connect(port, std::chrono::seconds(5));
      conn.next_id = std::uint64_t(c + 1) << 40;
      if (!conn.socket.is_open()) ++result_.broken;
      connections_.push_back(std::move(conn));
    }
  }

  /// Sends until `end`, then waits at most `drain` for the answers still due.
  GoodResult run(Clock::time_point end, std::chrono::milliseconds drain) {
    const auto give_up = end + drain;
    for (;;) {
      const auto now = Clock::now();
      const bool sending = now < end;
      if (!sending && (in_flight() == 0 || now >= give_up)) break;
      std::vector<pollfd> polls;
      std::vector<Connection*> polled;
      for (auto& c : connections_) {
        if (!c.socket.is_open()) continue;
        if (sending) top_up(c);
        polls.push_back(
            {c.socket.fd(), short(POLLIN | (c.out_at < c.out.size() ? POLLOUT : 0)), 0});
        polled.push_back(&c);
      }
      if (polls.empty()) break;
      ::poll(polls.data(), polls.size(), 20);
      for (std::size_t i = 0; i < polls.size(); ++i) {
        if (polls[i].revents & POLLOUT) flush(*polled[i]);
        if (polls[i].revents & (POLLIN | POLLHUP | POLLERR)) read(*polled[i]);
      }
    }
    for (auto& c : connections_) result_.lost += c.expected.size();
    return result_;
  }

 private:
  struct Connection {
    RawSocket socket;
    std::uint64_t next_id = 0;
    std::unordered_map<std::uint64_t, std::uint64_t> expected;  // id -> result, in flight
    std::vector<std::byte> out;                                 // frames not sent yet
    std::size_t out_at = 0;
    std::vector<std::byte> in;  // a response not read whole yet
  };

  std::size_t in_flight() const {
    std::size_t n = 0;
    for (const auto& c : connections_) n += c.socket.is_open() ? c.expected.size() : 0;
    return n;
  }

  // Keeps `outstanding_` requests in flight on `c`.
  void top_up(Connection& c) {
    if (c.expected.size() >= outstanding_) return;
    while (c.expected.size() < outstanding_) {
      const std::uint64_t id = c.next_id++;
      append_request(c.out, id, pool_.rounds(), pool_.payload(id));
      c.expected.emplace(id, pool_.expected(id));
      ++result_.sent;
    }
    flush(c);
  }

  void flush(Connection& c) {
    if (c.out_at == c.out.size()) return;
    const auto sent = c.socket.send_some(std::span(c.out).subspan(c.out_at));
    if (!sent) return broke(c);
    c.out_at += *sent;
    if (c.out_at == c.out.size()) {
      c.out.clear();
      c.out_at = 0;
    }
  }

  void read(Connection& c) {
    std::byte buf[16 * 1024];
    const auto n = c.socket.receive_some(buf);
    if (!n) return;
    if (*n == 0) return broke(c);
    c.in.insert(c.in.end(), buf, buf + *n);
    std::size_t at = 0;
    for (; c.in.size() - at >= response_size; at += response_size) {
      const Response r = read_response(c.in.data() + at);
      const auto it = c.expected.find(r.id);
      if (it == c.expected.end() || r.status != Status::ok || r.result != it->second) {
        ++result_.wrong;
        continue;
      }
      c.expected.erase(it);
      ++result_.answered;
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(at));
  }

  // The server closed (or refused) a well-behaved connection: its requests are lost.
  void broke(Connection& c) {
    ++result_.broken;
    result_.lost += c.expected.size();
    c.expected.clear();
    c.socket.close();
  }

  const RequestPool& pool_;
  std::size_t outstanding_;
  std::vector<Connection> connections_;
  GoodResult result_;
};

}  // namespace service
