// service_load: the load generator of the micro-batch service (docs/service.md). Loopback
// only, bounded in count and time. Measures the saturation throughput (closed loop), then
// runs open loop at 50%, 80% and 100% of it, then at 80% with 10% of the clients
// disconnecting mid-request, and prints `metric <name> <value> <unit>` lines.
//
//   service_load --spawn build/examples/micro_batch_service [flags] [-- server flags]
//   service_load --port N [flags]            (a server already running on 127.0.0.1:N)
//
// Exit: 0 when every request of a client that stayed connected got its correct answer at
// every level; 1 when one was lost (or the server failed, or could not be reached); 2 for a
// bad flag.

#include <algorithm>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "closed_loop.hpp"
#include "common/cli.hpp"
#include "open_loop.hpp"
#include "request_pool.hpp"
#include "server_process.hpp"

namespace {

void metric(const std::string& name, double value, const char* unit, int decimals = 0) {
  std::cout << "metric " << name << ' ' << std::fixed << std::setprecision(decimals) << value << ' '
            << unit << std::endl;
}

// The metric lines of one level; returns its lost count.
std::uint64_t report(const std::string& level, const service::LevelResult& r, bool open_loop) {
  metric(level + "_requests_per_s", r.requests_per_s, "req/s");
  metric(level + "_p50_us", r.p50_us, "us");
  metric(level + "_p99_us", r.p99_us, "us");
  metric(level + "_max_us", r.max_us, "us");
  if (open_loop) metric(level + "_send_lag_p99_us", r.send_lag_p99_us, "us");
  metric(level + "_lost", double(r.lost), "count");
  if (r.cpu) {
    metric(level + "_cpu_busy_pct", r.cpu->busy_pct, "%", 1);
    metric(level + "_cpu_steal_pct", r.cpu->steal_pct, "%", 1);
  }
  if (r.wrong + r.rejected + r.connection_errors > 0)
    std::cerr << level << ": " << r.wrong << " wrong answers, " << r.rejected << " rejected, "
              << r.connection_errors << " connections broken\n";
  return r.lost;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spawn, trace;
  std::int64_t port = 0, clients = 32, outstanding = 4, max_outstanding = 64, connections = 20;
  std::int64_t rounds = 16;
  std::int64_t payload_min = 64, payload_max = 512, tick_us = 250, run = 4;
  double warmup_s = 0.5, measure_s = 3, drain_s = 10, disconnect = 0.1, saturation_rps = 0;
  CLI::App app{
      "Load generator of micro_batch_service (docs/service.md): saturation, then open "
      "loop at 50/80/100% of it, then 80% with disconnecting clients. Flags after '--' "
      "go to the spawned server.",
      "service_load"};
  app.add_option("--spawn", spawn, "start this server executable with --port 0, stop it at the end")
      ->check(examples::non_empty());
  app.add_option("--port", port, "the port of a server already running on 127.0.0.1")
      ->check(examples::integer_in(1, 65535));
  app.add_option("--clients", clients, "closed loop (saturation): connections")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--outstanding", outstanding,
                 "closed loop: requests each connection keeps in flight at first; doubled while "
                 "the rate still grows by 5%")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--max-outstanding", max_outstanding,
                 "closed loop: the most requests each connection keeps in flight")
      ->check(examples::integer_in(1, 4096));
  app.add_option("--connections", connections,
                 "open loop: connections the arrivals are spread over")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--tick-us", tick_us,
                 "open loop: the generator wakes at most this often, sending what is due")
      ->check(examples::integer_in(1, 100'000));
  app.add_option("--run", run,
                 "open loop: consecutive requests per connection before the next one's turn")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--rounds", rounds,
                 "digest rounds per request: the server's work per payload byte")
      ->check(examples::integer_in(0, service::max_rounds));
  app.add_option("--payload-min", payload_min, "smallest payload, bytes")
      ->check(examples::integer_in(1, service::max_payload));
  app.add_option("--payload-max", payload_max, "largest payload, bytes")
      ->check(examples::integer_in(1, service::max_payload));
  app.add_option("--warmup-s", warmup_s, "seconds each level runs before it measures")
      ->check(examples::number_in(0, 60));
  app.add_option("--measure-s", measure_s, "seconds each level measures")
      ->check(examples::number_in(0.1, 600));
  app.add_option("--drain-s", drain_s,
                 "seconds a level waits at most for its last answers; later ones are lost")
      ->check(examples::number_in(0.1, 600));
  app.add_option("--saturation-rps", saturation_rps,
                 "skip the closed loop and take this as the saturation rate (to compare server "
                 "settings at the same offered load); 0: measure it")
      ->check(examples::number_in(0, 1e9));
  app.add_option("--disconnect-fraction", disconnect,
                 "share of the clients that disconnect mid-request in the last level")
      ->check(examples::number_in(0, 0.9));
  app.add_option("--trace", trace,
                 "write every timed request of the open-loop levels to this file: level, send time "
                 "and latency in microseconds (docs/service.md, Finding a tail)")
      ->check(examples::non_empty());
  std::vector<std::string> server_args;  // after '--'
  if (const auto exit_code = examples::parse(app, argc, argv, 2, &server_args)) return *exit_code;
  const bool spawns = app.count("--spawn") > 0;
  if (spawns == (app.count("--port") > 0))
    return examples::usage_error(app, "give one of --spawn PATH or --port N");
  if (!server_args.empty() && !spawns)
    return examples::usage_error(app, "server flags after '--' need --spawn");
  if (outstanding > max_outstanding)
    return examples::usage_error(app, "--outstanding: " + std::to_string(outstanding) +
                                          " is above --max-outstanding " +
                                          std::to_string(max_outstanding));
  if (payload_min > payload_max)
    return examples::usage_error(app, "--payload-min: " + std::to_string(payload_min) +
                                          " is above --payload-max " + std::to_string(payload_max));
  // Checked before any level runs, not when the last one is due.
  const auto flaky = static_cast<std::size_t>(std::lround(double(connections) * disconnect));
  if (flaky >= static_cast<std::size_t>(connections))
    return examples::usage_error(app, "--disconnect-fraction leaves no client connected");

  try {
    std::optional<service::ServerProcess> server;
    if (!spawn.empty()) {
      std::vector<std::string> args{"--port", "0"};
      args.insert(args.end(), server_args.begin(), server_args.end());
      server.emplace(spawn, args);
      port = server->wait_listening(std::chrono::seconds(30));
    }
    const boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::address_v4::loopback(),
                                                  static_cast<std::uint16_t>(port));
    const service::RequestPool pool(256, static_cast<std::size_t>(payload_min),
                                    static_cast<std::size_t>(payload_max),
                                    static_cast<std::uint32_t>(rounds));
    const service::LoadTiming timing{std::chrono::duration<double>(warmup_s),
                                     std::chrono::duration<double>(measure_s),
                                     std::chrono::duration<double>(drain_s), !trace.empty()};
    std::ofstream trace_out;
    if (!trace.empty()) {
      trace_out.open(trace);
      if (!trace_out) throw std::runtime_error("--trace " + trace + ": cannot write the file");
      trace_out << "level sent_us latency_us\n";
    }
    const auto write_trace = [&](const std::string& level, const service::LevelResult& r) {
      if (!trace_out.is_open()) return;
      for (const service::TimedRequest& t : r.timed)
        trace_out << level << ' '
                  << std::chrono::duration_cast<std::chrono::microseconds>(
                         t.sent.time_since_epoch())
                         .count()
                  << ' ' << std::llround(t.latency_us) << '\n';
      trace_out.flush();
    };
    std::uint64_t lost = 0;
    std::uint64_t level_ids = 0;  // each level's ids start at a multiple of 2^48
    auto first_id = [&] { return ++level_ids << 48; };

    double saturation_rate = saturation_rps;
    if (saturation_rate == 0) {
      // The closed loop saturates the server only with enough requests in flight: too few,
      // and its rate is in-flight / latency (Little's law), not the server's capacity. So the
      // in-flight count doubles until the rate grows by less than 5%; the best step is the
      // saturation. Steps measure at most 1 s each.
      service::LoadTiming step_timing = timing;
      step_timing.measure = std::min(timing.measure, std::chrono::duration<double>(1.0));
      step_timing.keep_timed = false;  // --trace covers the open-loop levels
      std::optional<service::LevelResult> best;
      std::size_t best_in_flight = 0;
      for (auto per_client = static_cast<std::size_t>(outstanding);
           per_client <= static_cast<std::size_t>(max_outstanding); per_client *= 2) {
        const auto step = service::ClosedLoopRun(endpoint, pool, first_id(),
                                                 {.clients = static_cast<std::size_t>(clients),
                                                  .outstanding = per_client,
                                                  .timing = step_timing})
                              .run();
        lost += step.lost;
        const bool grew = !best || step.requests_per_s >= best->requests_per_s * 1.05;
        if (!best || step.requests_per_s > best->requests_per_s) {
          best = step;
          best_in_flight = per_client * static_cast<std::size_t>(clients);
        }
        if (!grew) break;
      }
      report("saturation", *best, false);
      metric("saturation_in_flight", double(best_in_flight), "requests");
      saturation_rate = best->requests_per_s;
      if (saturation_rate <= 0) throw std::runtime_error("the server answered nothing");
    }

    const auto open = [&](double share, std::size_t flaky) {
      return service::OpenLoopRun(endpoint, pool, first_id(),
                                  {.rate = saturation_rate * share,
                                   .clients = static_cast<std::size_t>(connections),
                                   .run = static_cast<std::size_t>(run),
                                   .tick = std::chrono::microseconds(tick_us),
                                   .flaky = flaky,
                                   .timing = timing})
          .run();
    };
    for (int percent : {50, 80, 100}) {
      const auto r = open(percent / 100.0, 0);
      const std::string level = "load" + std::to_string(percent);
      lost += report(level, r, true);
      write_trace(level, r);
      if (percent == 80)
        metric("load80_p99_over_p50", r.p50_us > 0 ? r.p99_us / r.p50_us : 0, "ratio", 2);
    }
    const auto r = open(0.8, flaky);
    lost += report("load80_disconnect", r, true);
    write_trace("load80_disconnect", r);
    metric("load80_disconnect_p99_over_p50", r.p50_us > 0 ? r.p99_us / r.p50_us : 0, "ratio", 2);
    metric("load80_disconnect_abandoned", double(r.abandoned), "count");

    if (server) {
      server->terminate();
      const int status = server->wait(std::chrono::seconds(30));
      std::cout << server->output() << std::flush;  // its own metric lines
      if (status != 0) {
        std::cerr << "error: the server exited with status " << status << '\n';
        return 1;
      }
    }
    if (lost > 0) {
      std::cerr << "error: " << lost << " requests lost\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
