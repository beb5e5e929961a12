#pragma once
// LoadRun: what the load generator's closed- and open-loop levels share — connections, the
// ledger, the measurement window, and the drain at the end.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_usage.hpp"
#include "load_connection.hpp"
#include "request_ledger.hpp"
#include "request_pool.hpp"

namespace service {

/// How long a level warms up (requests sent then are neither timed nor counted), measures,
/// and waits at most for the answers still due once it stopped sending.
struct LoadTiming {
  std::chrono::duration<double> warmup{0.5};
  std::chrono::duration<double> measure{3.0};
  std::chrono::duration<double> drain{10.0};
  bool keep_timed = false;  ///< keep every timed request's send time and latency (--trace)
};

/// What one level measured.
struct LevelResult {
  std::uint64_t sent = 0;               ///< by clients that stayed connected
  std::uint64_t lost = 0;               ///< of those, without a correct answer by the end
  std::uint64_t wrong = 0;              ///< answers that were wrong (included in lost)
  std::uint64_t rejected = 0;           ///< answers Status::rejected (included in lost)
  std::uint64_t abandoned = 0;          ///< sent by clients that disconnected before their answer
  std::uint64_t connection_errors = 0;  ///< connections of staying clients that broke
  double requests_per_s = 0;            ///< correct answers received per second, in the window
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double send_lag_p99_us = 0;   ///< open loop: how late the generator sent (coordinated omission)
  std::optional<CpuUsage> cpu;  ///< the machine while the level sent (where /proc/stat is)
  std::deque<TimedRequest> timed;  ///< with LoadTiming::keep_timed: each timed request
};

/// One level on its own one-thread io_context, run on the calling thread: run() connects,
/// calls start(), and returns once sending is over and every answer came, or the drain time
/// passed. Bounded: a level ends after warmup + measure + drain at the latest.
class LoadRun {
 public:
  using Clock = std::chrono::steady_clock;

  LoadRun(const boost::asio::ip::tcp::endpoint& endpoint, const RequestPool& pool,
          std::uint64_t first_id, LoadTiming timing)
      : endpoint_(endpoint),
        pool_(pool),
        timing_(timing),
        ledger_(pool, first_id),
        drain_timer_(io_) {
    if (timing.keep_timed) ledger_.keep_timed();
  }
  virtual ~LoadRun() = default;
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;

 protected:
  static Clock::duration to_clock(std::chrono::duration<double> d) {
    return std::chrono::duration_cast<Clock::duration>(d);
  }

  /// Opens `n` connections whose answers go to the ledger (and then to answered()); runs the
  /// io_context until all are up. Throws std::runtime_error naming the endpoint if one fails.
  void connect(std::size_t n) {
    std::size_t pending = n;
    boost::system::error_code failure;
    for (std::size_t c = 0; c < n; ++c) {
      auto conn = std::make_shared<LoadConnection>(
          io_,
          [this, c](const Response& r, Clock::time_point arrived) {
            ledger_.received(r, arrived);
            answered(c);
            if (!sending_ && ledger_.outstanding() == 0) finish();
          },
          [this](const boost::system::error_code& error) {
            if (error && !finished_) ++result_.connection_errors;
          });
      conn->connect(endpoint_, [&](const boost::system::error_code& error) {
        if (error) failure = error;
        --pending;
      });
      connections_.push_back(std::move(conn));
    }
    while (pending > 0 && io_.run_one_for(std::chrono::seconds(10)) > 0) {
    }
    if (pending > 0 || failure)
      throw std::runtime_error("cannot connect to " + endpoint_.address().to_string() + ":" +
                               std::to_string(endpoint_.port()) + ": " +
                               (failure ? failure.message() : "timed out"));
  }

  /// Sends the next request on connection `c`, timed from now.
  void send(std::size_t c) {
    queue(c);
    connections_[c]->flush();
  }

  /// Queues the next request on connection `c`, timed from now; flush() writes it.
  void queue(std::size_t c) {
    const std::uint64_t id = ledger_.sent(Clock::now());
    connections_[c]->queue_request(id, pool_.rounds(), pool_.payload(id));
  }

  /// Sending is over: waits for the answers still due, at most the drain time.
  void sending_done() {
    sending_ = false;
    if (const auto end = CpuSample::now(); end && cpu_start_)
      result_.cpu = CpuUsage::between(*cpu_start_, *end);
    if (ledger_.outstanding() == 0) {
      finish();
      return;
    }
    drain_timer_.expires_after(to_clock(timing_.drain));
    drain_timer_.async_wait([this](const boost::system::error_code& error) {
      if (!error) finish();
    });
  }

  /// An answer came on connection `c` (after the ledger recorded it).
  virtual void answered(std::size_t /*c*/) {}
  /// Starts sending (the connections are up); ends with sending_done().
  virtual void start() = 0;

  /// Runs the level: connect(), then start() and the io_context until finished.
  LevelResult run(std::size_t connections) {
    connect(connections);
    cpu_start_ = CpuSample::now();
    start();
    io_.restart();
    io_.run();
    result_.sent = ledger_.sent_count();
    result_.lost = ledger_.lost();
    result_.wrong = ledger_.wrong();
    result_.rejected = ledger_.rejected();
    result_.requests_per_s = double(ledger_.correct_in_window()) / timing_.measure.count();
    result_.p50_us = ledger_.latencies().percentile(50);
    result_.p99_us = ledger_.latencies().percentile(99);
    result_.max_us = ledger_.latencies().percentile(100);
    result_.timed = std::move(ledger_.timed());
    return result_;
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    drain_timer_.cancel();
    for (auto& c : connections_) c->close();
    io_.stop();  // flaky connections or timers still pending are abandoned with the level
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::endpoint endpoint_;
  const RequestPool& pool_;
  LoadTiming timing_;
  RequestLedger ledger_;
  std::vector<std::shared_ptr<LoadConnection>> connections_;
  LevelResult result_;
  boost::asio::steady_timer drain_timer_;
  std::optional<CpuSample> cpu_start_;
  bool sending_ = true;
  bool finished_ = false;
};

}  // namespace service
