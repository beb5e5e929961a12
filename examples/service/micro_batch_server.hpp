#pragma once
// MicroBatchServer: a TCP service on loopback whose requests are micro-batched through a swp
// pipeline running on the service's own io_context.

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <swp/asio.hpp>
#include <thread>
#include <vector>

#include "batch_plan.hpp"
#include "batch_timeline.hpp"
#include "micro_batcher.hpp"
#include "protocol.hpp"
#include "server_stats.hpp"
#include "session.hpp"

namespace service {

struct ServerOptions {
  std::uint16_t port = 0;  ///< on 127.0.0.1; 0: an ephemeral port (see port())
  unsigned threads = 2;    ///< threads running the io_context: sockets and the pipeline's lanes
  std::size_t max_batch = 256;
  std::chrono::microseconds batch_window{1000};
  int depth = 4;                   ///< iterations (batches) in flight in the pipeline
  std::size_t capacity = 4;        ///< batches queued in the pipeline's inbox ahead of them
  std::size_t max_waiting = 2;     ///< sealed batches waiting for the inbox before reads pause
  std::uint64_t max_requests = 0;  ///< shut down after admitting this many; 0: no limit
  std::chrono::milliseconds duration{0};  ///< shut down after this long; 0: no limit
  bool handle_signals = false;            ///< SIGINT and SIGTERM shut down gracefully
  /// At shutdown, how long the answers may take to reach clients that do not read them.
  std::chrono::milliseconds flush_timeout{5000};
  /// Keep every retired batch's times (timeline()), for --trace.
  bool keep_timeline = false;
  /// The nice value of the pipeline's stream threads (compute, copy), set as they start
  /// (RuntimeOptions::on_thread_start); 0 leaves them as they are. They stand in for a GPU,
  /// which no io thread preempts: on a machine with fewer cores than threads, an io thread
  /// that preempts the compute stream delays every batch queued behind it (docs/service.md,
  /// Finding a tail). A negative value needs CAP_SYS_NICE; without it the server says so
  /// once on stderr and goes on (metric server_reniced_streams counts the threads it set).
  /// micro_batch_service sets -5 unless told otherwise (--stream-nice).
  int stream_nice = 0;
};

/// The service. Requests arrive on connections (Session), are gathered into micro-batches
/// (MicroBatcher) and submitted to a DataFlowPipeline (the plan of batch_plan.hpp) whose
/// lanes run as handlers on the server's io_context: one pool of `threads` threads runs the
/// sockets and the tasks. A driver keeps one swp::async_progress step pending; each retired
/// iteration is answered from on_retire (on the driver's thread), each failed one (a task
/// threw; FailurePolicy::skip keeps the run going) from on_failure with Status::failed.
///
/// Lifetime: the constructor binds and listens (port() is known then); start() fills the
/// pipeline and starts the threads; stop() shuts down gracefully from any thread: no new
/// connections, the forming batch sealed, the submissions closed after the last batch, the
/// pipeline's run ends once every batch admitted retired, every answer written (requests read
/// after stop() are answered Status::rejected until then), then every connection closed — a
/// client that does not read its answers is cut off after `flush_timeout`. The threads then
/// run out of work and wait() returns. A run that fails (a deadline, not a task: those are
/// skipped) ends the service the same way, with error() set.
/// Clients that disconnect are forgotten; their answers are dropped when they come.
///
/// Example:
/// ```
/// service::MicroBatchServer server({.port = 0, .threads = 2});
/// server.start();
/// connect_to(server.port()); ...
/// server.stop();
/// server.wait();
/// ```
class MicroBatchServer {
 public:
  /// Binds 127.0.0.1:options.port and listens. Throws std::invalid_argument for an option out
  /// of range, boost::system::system_error when the port cannot be bound.
  explicit MicroBatchServer(ServerOptions options)
      : options_(checked(options)),
        runtime_(
            io_.get_executor(),
            {.on_thread_start = [this](const swp::ThreadStart& t) { stream_thread_started(t); }}),
        pipe_(runtime_, make_batch_plan(), options_.depth),
        batcher_(io_.get_executor(), pipe_,
                 {.max_batch = options_.max_batch,
                  .window = options_.batch_window,
                  .max_waiting = options_.max_waiting,
                  .max_requests = options_.max_requests},
                 stats_),
        strand_(boost::asio::make_strand(io_)),
        acceptor_(strand_),
        signals_(strand_),
        deadline_(strand_),
        retry_(strand_),
        flush_deadline_(strand_) {
    pipe_.set_failure_policy(swp::FailurePolicy::skip);
    pipe_.retire_after_device();  // on_retire reads what the streams wrote
    pipe_.on_retire([this](const BatchCtx& ctx) { answer(ctx); });
    pipe_.on_failure([this](const BatchCtx& ctx, const std::exception_ptr& e) { fail(ctx, e); });
    batcher_.on_limit([this] { stop(); });
    const boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::address_v4::loopback(),
                                                  options_.port);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
  }

  MicroBatchServer(const MicroBatchServer&) = delete;
  MicroBatchServer& operator=(const MicroBatchServer&) = delete;

  /// Shuts down gracefully (stop()) and waits for the threads.
  ~MicroBatchServer() {
    stop();
    wait();
  }

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] const ServerStats& stats() const noexcept { return stats_; }
  /// Every retired batch's times, when options.keep_timeline (empty otherwise).
  [[nodiscard]] const BatchTimeline& timeline() const noexcept { return timeline_; }
  /// The error that ended the pipeline's run, if one did (then the service shut down).
  [[nodiscard]] std::exception_ptr error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

  /// Starts serving: fills the pipeline (the push form), keeps a progress step pending,
  /// accepts connections, and runs the io_context on `threads` threads. Call once.
  void start() {
    pipe_.fill_submissions(options_.capacity);
    drive();
    boost::asio::post(strand_, [this] {
      accept();
      if (options_.handle_signals) {
        signals_.add(SIGINT);
        signals_.add(SIGTERM);
        signals_.async_wait([this](const boost::system::error_code& error, int) {
          if (!error) begin_shutdown();
        });
      }
      if (options_.duration.count() > 0) {
        deadline_.expires_after(options_.duration);
        deadline_.async_wait([this](const boost::system::error_code& error) {
          if (!error) begin_shutdown();
        });
      }
    });
    running_ = options_.threads;
    for (unsigned i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { run_io(); });
  }

  /// Begins the graceful shutdown (see the class comment); any thread, any number of times.
  void stop() {
    boost::asio::post(strand_, [this] { begin_shutdown(); });
  }

  /// Waits until the service ended (every thread returned from the io_context).
  void wait() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  /// wait() with a deadline: false when the threads still run at `timeout`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    if (!ended_.wait_for(lock, timeout, [this] { return running_ == 0; })) return false;
    lock.unlock();
    wait();
    return true;
  }

 private:
  static const ServerOptions& checked(const ServerOptions& o) {
    if (o.threads < 1) throw std::invalid_argument("threads must be at least 1");
    if (o.max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    if (o.depth < 1) throw std::invalid_argument("depth must be at least 1");
    if (o.capacity < 1) throw std::invalid_argument("capacity must be at least 1");
    if (o.max_waiting < 1) throw std::invalid_argument("max_waiting must be at least 1");
    return o;
  }

  // On each thread the runtime starts (only the streams' here: the lanes run on io_).
  void stream_thread_started(const swp::ThreadStart& t) {
    if (t.role != swp::ThreadStart::Role::stream || options_.stream_nice == 0) return;
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options_.stream_nice) == 0) {
      ServerStats::add(stats_.reniced_streams);
      return;
    }
    const int error = errno;
    if (!renice_warned_.exchange(true))
      std::cerr << "warning: cannot set the nice value of stream '" << t.name << "' to "
                << options_.stream_nice << " (" << std::strerror(error)
                << "); the streams run at the default priority\n";
  }

  void run_io() {
    for (;;) {
      try {
        io_.run();
        break;
      } catch (const std::exception& e) {  // a handler threw: a bug, say so and go on serving
        std::cerr << "error: unexpected exception in a handler: " << e.what() << '\n';
      }
    }
    std::lock_guard lock(mutex_);
    if (--running_ == 0) ended_.notify_all();
  }

  // One progress step at a time; the handler is generic so that it takes the step's result
  // whichever type it has (swp::Retired, or an iteration number).
  void drive() {
    swp::async_progress(pipe_, [this](std::exception_ptr error, auto retired) {
      if (error || !retired) {
        boost::asio::post(strand_, [this, error] { pipeline_ended(error); });
        return;
      }
      drive();
    });
  }

  void accept() {
    acceptor_.async_accept(
        boost::asio::make_strand(io_),
        [this](const boost::system::error_code& error, boost::asio::ip::tcp::socket socket) {
          if (stopping_) return;  // the acceptor closed
          if (error) {
            // Out of descriptors or a connection reset before it was accepted: try again a
            // little later rather than spin.
            retry_.expires_after(std::chrono::milliseconds(10));
            retry_.async_wait([this](const boost::system::error_code& e) {
              if (!e && !stopping_) accept();
            });
            return;
          }
          boost::system::error_code ignored;
          socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
          auto session =
              std::make_shared<Session>(std::move(socket), batcher_, stats_,
                                        [this](const std::shared_ptr<Session>& s) { forget(s); });
          {
            std::lock_guard lock(mutex_);
            sessions_.insert(session);
          }
          ServerStats::add(stats_.connections);
          session->start();
          accept();
        });
  }

  // On the strand.
  void begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    signals_.cancel(ignored);
    deadline_.cancel();
    retry_.cancel();
    batcher_.close();
  }

  // On the strand, once the pipeline's run ended: every admitted request has its answer
  // queued on its session, so the sessions may close once those are written.
  void pipeline_ended(const std::exception_ptr& error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::cerr << "error: the pipeline's run failed: " << e.what() << '\n';
      }
      begin_shutdown();
      // Submissions waiting for the failed run's inbox would wait for ever: end them.
      pipe_.close_submissions();
    }
    std::vector<std::shared_ptr<Session>> open;
    {
      std::lock_guard lock(mutex_);
      error_ = error;
      pipeline_ended_ = true;
      open.assign(sessions_.begin(), sessions_.end());
    }
    for (const auto& s : open) s->close_when_flushed();
    if (open.empty()) return;
    flush_deadline_.expires_after(options_.flush_timeout);
    flush_deadline_.async_wait([this](const boost::system::error_code& e) {
      if (e) return;  // every session closed in time
      std::vector<std::shared_ptr<Session>> stuck;
      {
        std::lock_guard lock(mutex_);
        stuck.assign(sessions_.begin(), sessions_.end());
      }
      for (const auto& s : stuck) s->close();
    });
  }

  // A session closed (on its strand).
  void forget(const std::shared_ptr<Session>& session) {
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      sessions_.erase(session);
      last = pipeline_ended_ && sessions_.empty();
    }
    if (last) boost::asio::post(strand_, [this] { flush_deadline_.cancel(); });
  }

  // on_retire: each request's response, written by Encode, goes to its session; consecutive
  // requests of one session go as one answer.
  void answer(const BatchCtx& ctx) {
    if (options_.keep_timeline)
      timeline_.record(ctx.batch.size(), ctx.batch.times, TraceClock::now());
    const auto& items = ctx.batch.items;
    std::uint64_t ok = 0;
    for (std::size_t j = 0; j < items.size(); ++j)
      ok += read_response(ctx.responses.data() + j * response_size).status == Status::ok;
    ServerStats::add(stats_.answered_ok, ok);
    ServerStats::add(stats_.bad_requests, items.size() - ok);
    ServerStats::add(stats_.batches);
    stats_.settle(items.size());
    deliver(items, ctx.responses);
  }

  // on_failure: the batch's requests are answered Status::failed.
  void fail(const BatchCtx& ctx, const std::exception_ptr& error) {
    const auto& items = ctx.batch.items;
    std::vector<std::byte> responses(items.size() * response_size);
    for (std::size_t j = 0; j < items.size(); ++j)
      write_response(responses.data() + j * response_size,
                     {parse_request_header(ctx.batch.body(items[j])).id, Status::failed, 0});
    ServerStats::add(stats_.failed, items.size());
    ServerStats::add(stats_.batches);
    stats_.settle(items.size());
    if (!reported_failure_.exchange(true)) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::cerr << "error: a batch failed (its requests are answered 'failed'): " << e.what()
                  << '\n';
      }
    }
    deliver(items, responses);
  }

  static void deliver(const std::vector<RequestBatch::Item>& items,
                      const std::vector<std::byte>& responses) {
    for (std::size_t j = 0; j < items.size();) {
      std::size_t k = j + 1;
      while (k < items.size() && items[k].session == items[j].session) ++k;
      items[j].session->answer(
          std::span(responses.data() + j * response_size, (k - j) * response_size));
      j = k;
    }
  }

  const ServerOptions options_;
  ServerStats stats_;
  BatchTimeline timeline_;
  std::atomic<bool> renice_warned_{false};
  boost::asio::io_context io_;
  swp::AsioRuntime runtime_;  // lanes are handlers on io_
  swp::DataFlowPipeline<BatchCtx> pipe_;
  MicroBatcher batcher_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;  // the fields below
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer deadline_;  // --duration
  boost::asio::steady_timer retry_;     // the next accept after a failed one
  boost::asio::steady_timer flush_deadline_;
  bool stopping_ = false;
  std::uint16_t port_ = 0;
  std::atomic<bool> reported_failure_{false};
  mutable std::mutex mutex_;  // the fields below
  std::set<std::shared_ptr<Session>> sessions_;
  bool pipeline_ended_ = false;
  std::exception_ptr error_;
  unsigned running_ = 0;
  std::condition_variable ended_;
  std::vector<std::thread> threads_;
};

}  // namespace service
