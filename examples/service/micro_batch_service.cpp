// micro_batch_service: a TCP service on 127.0.0.1 that micro-batches its requests through a
// swp pipeline running on its own io_context (docs/service.md). Prints `listening <port>`
// once it accepts; SIGINT/SIGTERM (or --max-requests / --duration-s) shut it down gracefully,
// after which it prints its counters as `metric server_* ...` lines and exits 0 (1 if the
// pipeline's run failed, 2 for a bad flag).

#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "flags.hpp"
#include "micro_batch_server.hpp"

int main(int argc, char** argv) {
  std::int64_t port = 0, threads = 2, batch = 256, window_us = 1000, depth = 4, capacity = 4;
  std::int64_t max_waiting = 2, max_requests = 0, stream_nice = -5;
  std::int64_t max_connections = 0, max_unwritten_kib = 64, send_buffer_kib = 0;
  double duration_s = 0, idle_timeout_s = 60, frame_timeout_s = 10;
  std::string trace;
  service::Flags flags("micro_batch_service",
                       "A TCP service on 127.0.0.1 micro-batching its requests through a swp "
                       "pipeline (docs/service.md).");
  flags.integer("port", port, 0, 65535, "port on 127.0.0.1; 0: any free port");
  flags.integer("threads", threads, 1, 64, "threads running the io_context (sockets and lanes)");
  flags.integer("batch", batch, 1, 65536, "most requests in one batch (one pipeline iteration)");
  flags.integer("batch-window-us", window_us, 0, 10'000'000,
                "a batch is sealed this long after its first request, if not full before");
  flags.integer("depth", depth, 1, 64, "batches in flight in the pipeline (max_depth)");
  flags.integer("capacity", capacity, 1, 4096,
                "batches queued in the pipeline's inbox (fill_submissions)");
  flags.integer("max-waiting", max_waiting, 1, 4096,
                "sealed batches waiting for the inbox before connections stop reading");
  flags.integer("max-requests", max_requests, 0, INT64_MAX,
                "shut down after admitting this many requests; 0: no limit");
  flags.real("duration-s", duration_s, 0, 1e6, "shut down after this many seconds; 0: no limit");
  flags.integer("stream-nice", stream_nice, -20, 19,
                "nice value of the pipeline's stream threads, which stand in for a GPU (a "
                "negative one needs CAP_SYS_NICE); 0: leave them alone");
  flags.integer("max-connections", max_connections, 0, 1'000'000,
                "connections open at once; one more is answered 'busy' and closed at once; 0: "
                "what RLIMIT_NOFILE leaves free at start, less 16");
  flags.integer("max-unwritten-kib", max_unwritten_kib, 1, 1024 * 1024,
                "KiB of answers queued for one connection above which the server stops reading "
                "it until they are written");
  flags.integer("send-buffer-kib", send_buffer_kib, 0, 1024 * 1024,
                "SO_SNDBUF of each connection in KiB; 0: the kernel's autotuning");
  flags.real("idle-timeout-s", idle_timeout_s, 0, 1e6,
             "close a connection that moved no byte either way for this long; 0: never");
  flags.real("frame-timeout-s", frame_timeout_s, 0, 1e6,
             "close a connection whose frame is not whole this long after its first byte; 0: "
             "no deadline");
  flags.text("trace", trace,
             "at exit, write every batch's times to this file (docs/service.md, Finding a tail)");
  if (const auto exit_code = flags.parse_or_exit(argc, argv)) return *exit_code;
  // A positive timeout below a millisecond is one millisecond, not "never".
  const auto milliseconds_of = [](double seconds) {
    const auto ms = static_cast<std::int64_t>(seconds * 1000);
    return std::chrono::milliseconds(seconds > 0 && ms == 0 ? 1 : ms);
  };
  const service::ServerOptions options{
      .port = static_cast<std::uint16_t>(port),
      .threads = static_cast<unsigned>(threads),
      .max_batch = static_cast<std::size_t>(batch),
      .batch_window = std::chrono::microseconds(window_us),
      .depth = static_cast<int>(depth),
      .capacity = static_cast<std::size_t>(capacity),
      .max_waiting = static_cast<std::size_t>(max_waiting),
      .max_requests = static_cast<std::uint64_t>(max_requests),
      .duration = std::chrono::milliseconds(static_cast<std::int64_t>(duration_s * 1000)),
      .handle_signals = true,
      .keep_timeline = !trace.empty(),
      .stream_nice = static_cast<int>(stream_nice),
      .max_connections = static_cast<std::size_t>(max_connections),
      .max_unwritten = static_cast<std::size_t>(max_unwritten_kib) * 1024,
      .idle_timeout = milliseconds_of(idle_timeout_s),
      .frame_timeout = milliseconds_of(frame_timeout_s),
      .send_buffer = static_cast<std::size_t>(send_buffer_kib) * 1024,
  };
  try {
    std::optional<service::MicroBatchServer> server;
    try {
      server.emplace(options);
    } catch (const boost::system::system_error& e) {
      std::cerr << "error: --port " << port << ": cannot listen on 127.0.0.1: " << e.what() << '\n';
      return 1;
    }
    server->start();
    std::cout << "listening " << server->port() << std::endl;  // flushed: a parent waits for it
    server->wait();
    server->stats().print(std::cout);
    std::cout << "metric server_max_connections " << server->max_connections() << " count\n";
    if (!trace.empty() && !server->timeline().write(trace)) {
      std::cerr << "error: --trace " << trace << ": cannot write the file\n";
      return 1;
    }
    return server->error() ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
