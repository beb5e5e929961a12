#pragma once
// ClosedLoopRun: the load generator's saturation level — many clients, each sending its next
// request as soon as an answer comes.

#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>

#include "load_run.hpp"

namespace service {

struct ClosedLoop {
  std::size_t clients = 32;     ///< connections
  std::size_t outstanding = 4;  ///< requests each keeps in flight
  LoadTiming timing;
};

/// Closed loop: `clients` × `outstanding` requests always in flight, so the server always has
/// work waiting; the answers per second it sustains is its saturation throughput (for this
/// concurrency). Latency here is mostly queueing (Little's law), so only the rate matters.
class ClosedLoopRun final : public LoadRun {
 public:
  ClosedLoopRun(const boost::asio::ip::tcp::endpoint& endpoint, const RequestPool& pool,
                std::uint64_t first_id, ClosedLoop options)
      : LoadRun(endpoint, pool, first_id, options.timing), options_(options), stop_(io_) {}

  LevelResult run() { return LoadRun::run(options_.clients); }

 private:
  void start() override {
    const auto t0 = Clock::now();
    end_ = t0 + to_clock(timing_.warmup + timing_.measure);
    ledger_.set_window(t0 + to_clock(timing_.warmup), end_);
    for (std::size_t c = 0; c < options_.clients; ++c)
      for (std::size_t k = 0; k < options_.outstanding; ++k) send(c);
    stop_.expires_at(end_);
    stop_.async_wait([this](const boost::system::error_code& error) {
      if (!error) sending_done();
    });
  }

  void answered(std::size_t c) override {
    if (sending_ && Clock::now() < end_) send(c);
  }

  ClosedLoop options_;
  boost::asio::steady_timer stop_;
  Clock::time_point end_;
};

}  // namespace service
