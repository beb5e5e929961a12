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

#include "common/cli.hpp"
#include "micro_batch_server.hpp"

int main(int argc, char** argv) {
  std::int64_t port = 0, threads = 2, batch = 256, window_us = 1000, depth = 4, capacity = 4;
  std::int64_t max_waiting = 2, max_requests = 0, stream_nice = -5;
  std::int64_t max_connections = 0, max_unwritten_kib = 64, send_buffer_kib = 0;
  double duration_s = 0, idle_timeout_s = 60, frame_timeout_s = 10;
  std::string trace;
  CLI::App app{
      "A TCP service on 127.0.0.1 micro-batching its requests through a swp pipeline "
      "(docs/service.md).",
      "micro_batch_service"};
  app.add_option("--port", port, "port on 127.0.0.1; 0: any free port")
      ->check(examples::integer_in(0, 65535));
  app.add_option("--threads", threads, "threads running the io_context (sockets and lanes)")
      ->check(examples::integer_in(1, 64));
  app.add_option("--batch", batch, "most requests in one batch (one pipeline iteration)")
      ->check(examples::integer_in(1, 65536));
  app.add_option("--batch-window-us", window_us,
                 "a batch is sealed this long after its first request, if not full before")
      ->check(examples::integer_in(0, 10'000'000));
  app.add_option("--depth", depth, "batches in flight in the pipeline (max_depth)")
      ->check(examples::integer_in(1, 64));
  app.add_option("--capacity", capacity,
                 "batches queued in the pipeline's inbox (fill_submissions)")
      ->check(examples::integer_in(1, 4096));
  app.add_option("--max-waiting", max_waiting,
                 "sealed batches waiting for the inbox before connections stop reading")
      ->check(examples::integer_in(1, 4096));
  app.add_option("--max-requests", max_requests,
                 "shut down after admitting this many requests; 0: no limit")
      ->check(examples::integer_in(0, INT64_MAX));
  app.add_option("--duration-s", duration_s, "shut down after this many seconds; 0: no limit")
      ->check(examples::number_in(0, 1e6));
  app.add_option("--stream-nice", stream_nice,
                 "nice value of the pipeline's stream threads, which stand in for a GPU (a "
                 "negative one needs CAP_SYS_NICE); 0: leave them alone")
      ->check(examples::integer_in(-20, 19));
  app.add_option("--max-connections", max_connections,
                 "connections open at once; one more is answered 'busy' and closed at once; 0: "
                 "what RLIMIT_NOFILE leaves free at start, less 16")
      ->check(examples::integer_in(0, 1'000'000));
  app.add_option("--max-unwritten-kib", max_unwritten_kib,
                 "KiB of answers queued for one connection above which the server stops reading it "
                 "until they are written")
      ->check(examples::integer_in(1, 1024 * 1024));
  app.add_option("--send-buffer-kib", send_buffer_kib,
                 "SO_SNDBUF of each connection in KiB; 0: the kernel's autotuning")
      ->check(examples::integer_in(0, 1024 * 1024));
  app.add_option("--idle-timeout-s", idle_timeout_s,
                 "close a connection that moved no byte either way for this long; 0: never")
      ->check(examples::number_in(0, 1e6));
  app.add_option("--frame-timeout-s", frame_timeout_s,
                 "close a connection whose frame is not whole this long after its first byte; 0: "
                 "no deadline")
      ->check(examples::number_in(0, 1e6));
  app.add_option(
         "--trace", trace,
         "at exit, write every batch's times to this file (docs/service.md, Finding a tail)")
      ->check(examples::non_empty());
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
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
