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
#include "flags.hpp"
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
  service::Flags flags("service_load",
                       "Load generator of micro_batch_service (docs/service.md): saturation, "
                       "then open loop at 50/80/100% of it, then 80% with disconnecting "
                       "clients. Flags after '--' go to the spawned server.");
  flags.text("spawn", spawn, "start this server executable with --port 0, stop it at the end");
  flags.integer("port", port, 1, 65535, "the port of a server already running on 127.0.0.1");
  flags.integer("clients", clients, 1, 1024, "closed loop (saturation): connections");
  flags.integer("outstanding", outstanding, 1, 1024,
                "closed loop: requests each connection keeps in flight at first; doubled "
                "while the rate still grows by 5%");
  flags.integer("max-outstanding", max_outstanding, 1, 4096,
                "closed loop: the most requests each connection keeps in flight");
  flags.integer("connections", connections, 1, 1024,
                "open loop: connections the arrivals are spread over");
  flags.integer("tick-us", tick_us, 1, 100'000,
                "open loop: the generator wakes at most this often, sending what is due");
  flags.integer("run", run, 1, 1024,
                "open loop: consecutive requests per connection before the next one's turn");
  flags.integer("rounds", rounds, 0, service::max_rounds,
                "digest rounds per request: the server's work per payload byte");
  flags.integer("payload-min", payload_min, 1, service::max_payload, "smallest payload, bytes");
  flags.integer("payload-max", payload_max, 1, service::max_payload, "largest payload, bytes");
  flags.real("warmup-s", warmup_s, 0, 60, "seconds each level runs before it measures");
  flags.real("measure-s", measure_s, 0.1, 600, "seconds each level measures");
  flags.real("drain-s", drain_s, 0.1, 600,
             "seconds a level waits at most for its last answers; later ones are lost");
  flags.real("saturation-rps", saturation_rps, 0, 1e9,
             "skip the closed loop and take this as the saturation rate (to compare server "
             "settings at the same offered load); 0: measure it");
  flags.real("disconnect-fraction", disconnect, 0, 0.9,
             "share of the clients that disconnect mid-request in the last level");
  flags.text("trace", trace,
             "write every timed request of the open-loop levels to this file: level, send "
             "time and latency in microseconds (docs/service.md, Finding a tail)");
  std::vector<std::string> server_args;
  try {
    server_args = flags.parse(argc, argv);
    if (flags.help_requested()) {
      std::cout << flags.usage();
      return 0;
    }
    if (flags.given("spawn") == flags.given("port"))
      throw service::FlagError("give one of --spawn PATH or --port N");
    if (!server_args.empty() && !flags.given("spawn"))
      throw service::FlagError("server flags after '--' need --spawn");
    if (outstanding > max_outstanding)
      throw service::FlagError("--outstanding: " + std::to_string(outstanding) +
                               " is above --max-outstanding " + std::to_string(max_outstanding));
    if (payload_min > payload_max)
      throw service::FlagError("--payload-min: " + std::to_string(payload_min) +
                               " is above --payload-max " + std::to_string(payload_max));
  } catch (const service::FlagError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }

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
    const auto flaky = static_cast<std::size_t>(std::lround(double(connections) * disconnect));
    if (flaky >= static_cast<std::size_t>(connections))
      throw service::FlagError("--disconnect-fraction leaves no client connected");
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
  } catch (const service::FlagError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
