#pragma once
// MicroBatchServer: a TCP service on loopback whose requests are micro-batched through a swp
// pipeline running on the service's own io_context.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
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

/// The connection cap a server gets by default (ServerOptions::max_connections 0): the
/// descriptors RLIMIT_NOFILE's soft limit leaves free now, less a reserve of 16 for the
/// server's own (its io_context's three, the acceptor, the signal pipe, the spare descriptor
/// it refuses with, a --trace file, headroom); at least 1.
inline std::size_t default_max_connections() {
  constexpr std::size_t reserve = 16;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - reserve;
  const std::size_t slots =
      limit.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20 : std::size_t(limit.rlim_cur);
  // A descriptor takes a slot only when its number is below the limit.
  std::size_t in_use = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    const std::string name = entry.path().filename().string();
    if (std::strtoull(name.c_str(), nullptr, 10) < slots) ++in_use;
  }
  if (error) in_use = 3;
  return slots > in_use + reserve ? slots - in_use - reserve : 1;
}

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
  /// Connections open at once. One beyond is refused at once: the server sends it a single
  /// response {id 0, Status::busy} and closes it. 0: default_max_connections(), so that
  /// connections never exhaust the descriptors. When descriptors run out all the same
  /// (another part of the process took them), the server refuses the waiting connection the
  /// same way with a spare descriptor kept for that, instead of leaving it unanswered.
  std::size_t max_connections = 0;
  /// Bytes of answers queued for writing to one connection above which the server stops
  /// reading it until they are written (a client that does not read its answers): its
  /// memory in the server stays bounded while the other connections are served.
  std::size_t max_unwritten = 64 * 1024;
  /// A connection that moved no byte either way for this long is closed (an idle client, or
  /// one that stopped reading its answers); not while requests of it are in the pipeline or
  /// the server's back-pressure holds it. 0: never.
  std::chrono::milliseconds idle_timeout{60'000};
  /// A frame begun must be whole within this long, or its connection is closed (a client
  /// sending a byte now and then, or half a frame); the clock stops while the server holds
  /// the connection's reads back. 0: no deadline.
  std::chrono::milliseconds frame_timeout{10'000};
  /// SO_SNDBUF of each connection, in bytes; 0 leaves the kernel's autotuning. What the kernel
  /// buffers for a client that does not read (up to tcp_wmem's maximum, 4 MiB by default) is
  /// memory too, outside the server's own; past it max_unwritten applies.
  std::size_t send_buffer = 0;
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
/// Limits per client (ServerOptions): a connection cap that refuses the connection beyond it
/// at once (Status::busy), answers queued for writing bounded per connection (its reads pause
/// past max_unwritten), and deadlines that close a connection whose client went idle or
/// sends a frame too slowly (a sweep checks them every quarter of the shorter one).
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
      : options_(resolved(options)),
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
        flush_deadline_(strand_),
        sweep_(strand_) {
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
    // accept() after giving up the spare descriptor must not wait for a client that left.
    acceptor_.non_blocking(true);
    port_ = acceptor_.local_endpoint().port();
    spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }

  MicroBatchServer(const MicroBatchServer&) = delete;
  MicroBatchServer& operator=(const MicroBatchServer&) = delete;

  /// Shuts down gracefully (stop()) and waits for the threads.
  ~MicroBatchServer() {
    stop();
    wait();
    if (spare_ >= 0) ::close(spare_);
  }

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// The connection cap in force (options.max_connections, or its default).
  [[nodiscard]] std::size_t max_connections() const noexcept { return options_.max_connections; }
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
      sweep();
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
  static ServerOptions resolved(ServerOptions o) {
    if (o.threads < 1) throw std::invalid_argument("threads must be at least 1");
    if (o.max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    if (o.depth < 1) throw std::invalid_argument("depth must be at least 1");
    if (o.capacity < 1) throw std::invalid_argument("capacity must be at least 1");
    if (o.max_waiting < 1) throw std::invalid_argument("max_waiting must be at least 1");
    if (o.max_unwritten < response_size)
      throw std::invalid_argument("max_unwritten must hold at least one response (24 bytes)");
    if (o.idle_timeout.count() < 0 || o.frame_timeout.count() < 0)
      throw std::invalid_argument("timeouts must not be negative");
    if (o.send_buffer > std::size_t{1} << 30)
      throw std::invalid_argument("send_buffer must be at most 1 GiB");
    if (o.max_connections == 0) o.max_connections = default_max_connections();
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

  // On the strand (the handlers too): one accept pending at a time.
  void accept() {
    acceptor_.async_accept(
        boost::asio::make_strand(io_),
        [this](const boost::system::error_code& error, boost::asio::ip::tcp::socket socket) {
          if (stopping_) return;  // the acceptor closed
          if (error) {
            accept_failed(error);
            return;
          }
          admit(std::move(socket));
          accept();
        });
  }

  // A connection accepted: a session, or a refusal past the cap.
  void admit(boost::asio::ip::tcp::socket socket) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mutex_);
      if (sessions_.size() < options_.max_connections) {
        boost::system::error_code ignored;
        socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        if (options_.send_buffer != 0)
          socket.set_option(
              boost::asio::socket_base::send_buffer_size(static_cast<int>(options_.send_buffer)),
              ignored);
        session =
            std::make_shared<Session>(std::move(socket), batcher_, stats_,
                                      SessionLimits{.max_unwritten = options_.max_unwritten,
                                                    .idle_timeout = options_.idle_timeout,
                                                    .frame_timeout = options_.frame_timeout},
                                      [this](const std::shared_ptr<Session>& s) { forget(s); });
        sessions_.insert(session);
      }
    }
    if (!session) {
      refuse(socket);
      return;
    }
    stats_.opened();
    session->start();
  }

  // Refuses a connection: one response {id 0, Status::busy}, then the connection closes.
  void refuse(boost::asio::ip::tcp::socket& socket) {
    ServerStats::add(stats_.refused);  // before the client can see it
    std::byte busy[response_size];
    write_response(busy, {0, Status::busy, 0});
    // A new connection's send buffer is empty, so the response fits without waiting; a client
    // that reset meanwhile just does not get it.
    [[maybe_unused]] const ssize_t sent =
        ::send(socket.native_handle(), busy, sizeof busy, MSG_NOSIGNAL | MSG_DONTWAIT);
    boost::system::error_code ignored;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  // An accept failed. Out of descriptors, a waiting connection would stay in the backlog
  // unanswered for as long as none frees (and none may): refuse it with the spare descriptor,
  // and accept again at once for the next one of a burst. But accept() fails so whenever the
  // descriptors are out, a connection waiting or not; when none was, or on any other error (a
  // connection reset before it was accepted, no memory), try again 10 ms later rather than
  // spin: while out of descriptors, a new client is refused within about that.
  void accept_failed(const boost::system::error_code& error) {
    const bool out_of_descriptors = error == boost::asio::error::no_descriptors ||
                                    error == boost::system::errc::too_many_files_open_in_system;
    if (out_of_descriptors && refuse_with_spare()) {
      accept();
      return;
    }
    retry_.expires_after(std::chrono::milliseconds(10));
    retry_.async_wait([this](const boost::system::error_code& e) {
      if (!e && !stopping_) accept();
    });
  }

  // Frees the spare descriptor, accepts a waiting connection into it and refuses it, then
  // takes the spare again. False when none was refused: no connection waited, there was no
  // spare, or the accept failed otherwise.
  bool refuse_with_spare() {
    if (spare_ < 0) spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // a descriptor freed
    if (spare_ < 0) return false;
    ::close(spare_);
    boost::asio::ip::tcp::socket socket(io_);
    boost::system::error_code error;
    acceptor_.accept(socket, error);  // non-blocking: would_block when the client left
    if (!error) refuse(socket);
    spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return !error;
  }

  // Every quarter of the shorter timeout (10 ms to 1 s), each session checks its deadlines;
  // on the strand, until the pipeline's run ended.
  void sweep() {
    auto period = std::chrono::milliseconds::max();
    for (const auto timeout : {options_.idle_timeout, options_.frame_timeout})
      if (timeout.count() > 0) period = std::min(period, timeout / 4);
    if (period == std::chrono::milliseconds::max() || pipeline_done_) return;
    sweep_.expires_after(
        std::clamp(period, std::chrono::milliseconds(10), std::chrono::milliseconds(1000)));
    sweep_.async_wait([this](const boost::system::error_code& error) {
      if (error || pipeline_done_) return;
      const auto now = Session::Clock::now();
      {
        std::lock_guard lock(mutex_);
        for (const auto& s : sessions_) s->check_deadlines(now);  // posts to the session only
      }
      sweep();
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
    pipeline_done_ = true;
    sweep_.cancel();  // the io_context must run out of work: flush_deadline_ ends the rest
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
    stats_.closed();
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
  boost::asio::steady_timer sweep_;  // the sessions' deadlines
  bool stopping_ = false;
  bool pipeline_done_ = false;
  int spare_ = -1;  // a descriptor held to refuse a connection with when none is left
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
