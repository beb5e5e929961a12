#pragma once
// OpenLoopRun: the load generator's fixed-rate levels, optionally with clients that
// disconnect mid-request.

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "latency_stats.hpp"
#include "load_run.hpp"

namespace service {

struct OpenLoop {
  double rate = 1000;        ///< requests per second, over all clients
  std::size_t clients = 16;  ///< arrivals go to the clients in turn, `run` at a time
  /// Consecutive requests a client gets before the next client's turn: those that are due in
  /// the same tick leave in one write.
  std::size_t run = 4;
  /// The generator wakes at most once per tick and sends every request due by then.
  std::chrono::microseconds tick{250};
  /// Of the clients, how many disconnect mid-request: each sends its turns' requests on a
  /// connection of its own and, after `burst` of them, closes it before the answers came —
  /// in turn with a FIN, with a reset (SO_LINGER 0), and in the middle of a frame — then opens
  /// a new one at its next turn. Their requests are `abandoned`, not timed, not lost.
  std::size_t flaky = 0;
  std::size_t burst = 3;
  LoadTiming timing;
};

/// Open loop: request k is due at t0 + k / rate whatever the answers do (arrivals do not wait
/// for the server, as a service's users do not), on client (k / run) mod clients. The generator
/// wakes when the next request is due, but at most once per `tick`, and sends every request
/// due by then, those of one client in one write: on this machine a system call and a wake-up
/// cost tens of microseconds, and a generator paying them per request would take the CPU the
/// server needs. Arrivals therefore come in groups of at most a tick's worth; over any longer
/// span the rate is exact, and a late wake-up is caught up at once. Latency is timed from the
/// actual send; how late each send was against its due time is reported (send_lag_p99_us), so
/// that a generator that fell behind (coordinated omission) shows.
class OpenLoopRun final : public LoadRun {
 public:
  OpenLoopRun(const boost::asio::ip::tcp::endpoint& endpoint, const RequestPool& pool,
              std::uint64_t first_id, OpenLoop options)
      : LoadRun(endpoint, pool, first_id, options.timing),
        options_(options),
        timer_(io_),
        flaky_(options.flaky),
        flaky_id_(first_id + (std::uint64_t{1} << 40)) {}

  LevelResult run() {
    LevelResult r = LoadRun::run(options_.clients - options_.flaky);
    r.send_lag_p99_us = lag_.percentile(99);
    return r;
  }

 private:
  struct Flaky {
    std::shared_ptr<LoadConnection> connection;
    std::size_t sent = 0;
    std::uint64_t cycle = 0;
  };

  Clock::duration due_at(std::uint64_t k) const {
    return to_clock(std::chrono::duration<double>(double(k) / options_.rate));
  }

  void start() override {
    t0_ = Clock::now();
    const auto begin = t0_ + to_clock(timing_.warmup);
    ledger_.set_window(begin, begin + to_clock(timing_.measure));
    total_ = static_cast<std::uint64_t>(
        std::llround(options_.rate * (timing_.warmup + timing_.measure).count()));
    window_begin_ = begin;
    ledger_.reserve(total_);
    lag_.reserve(total_);
    tick();
  }

  void tick() {
    const auto now = Clock::now();
    const std::size_t stable = options_.clients - options_.flaky;
    touched_.clear();
    for (; next_ < total_ && t0_ + due_at(next_) <= now; ++next_) {
      if (now >= window_begin_)
        lag_.add(std::chrono::duration<double, std::micro>(now - (t0_ + due_at(next_))).count());
      const std::size_t client = (next_ / options_.run) % options_.clients;
      if (client < stable) {
        queue(client);
        if (touched_.empty() || touched_.back() != client) touched_.push_back(client);
      } else {
        send_flaky(flaky_[client - stable]);
      }
    }
    for (std::size_t c : touched_) connections_[c]->flush();
    if (next_ >= total_) {
      sending_done();
      return;
    }
    timer_.expires_at(std::max(t0_ + due_at(next_), now + options_.tick));
    timer_.async_wait([this](const boost::system::error_code& error) {
      if (!error) tick();
    });
  }

  void send_flaky(Flaky& f) {
    if (!f.connection) {
      f.connection =
          std::make_shared<LoadConnection>(io_, [](const Response&, Clock::time_point) {});
      f.connection->connect(endpoint_);
      f.sent = 0;
    }
    const std::uint64_t id = flaky_id_++;
    ++result_.abandoned;
    const bool last = ++f.sent == options_.burst;
    const auto mode = f.cycle % 3;
    if (last && mode == 2) {  // cut the frame in the middle of its payload
      std::vector<std::byte> frame;
      append_request(frame, id, pool_.rounds(), pool_.payload(id));
      f.connection->send_bytes(
          std::span(frame).first(frame.size() - pool_.payload(id).size() / 2 - 1));
    } else {
      f.connection->send_request(id, pool_.rounds(), pool_.payload(id));
    }
    if (last) {
      f.connection->close_after_send(/*abortive=*/mode == 1);
      f.connection.reset();
      ++f.cycle;
    }
  }

  OpenLoop options_;
  boost::asio::steady_timer timer_;
  std::vector<Flaky> flaky_;
  std::uint64_t flaky_id_;
  Clock::time_point t0_;
  Clock::time_point window_begin_;
  std::uint64_t total_ = 0;
  std::uint64_t next_ = 0;
  LatencyStats lag_;
  std::vector<std::size_t> touched_;  // clients given requests in this tick
};

}  // namespace service
