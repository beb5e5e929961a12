// service_hostile: the micro-batch service under hostile clients (docs/service.md, "Hostile
// clients"). Spawns the server with a low descriptor limit and short timeouts, then for
// --seconds runs, all at once: well-behaved clients whose every request is checked, clients
// that never read their answers, waves of idle connections beyond the server's cap,
// malformed frames, and half-sent and trickled frames (slowloris). Loopback only, bounded in
// time; samples the server's resident memory from /proc/<pid>/status meanwhile.
//
//   service_hostile --spawn build/examples/micro_batch_service [flags] [-- server flags]
//
// Prints `metric hostile_<name> <value> <unit>` lines, then the server's own. Exit 0 when
// every check held: no well-behaved request lost or wrong, the server's peak resident memory
// under --rss-limit-mb, every hostile connection refused or closed in time, a new client
// served after every wave, the server's counters agreeing, and the server exiting 0. Exit 1
// otherwise (each failed check on its own line, then one `error:` line), 2 for a bad flag.

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "good_clients.hpp"
#include "hostile_clients.hpp"
#include "request_pool.hpp"
#include "server_process.hpp"

namespace {

using namespace std::chrono_literals;
using service::HostileClock;

void metric(const std::string& name, double value, const char* unit) {
  std::cout << "metric hostile_" << name << ' ' << value << ' ' << unit << '\n';
}

std::string one_decimal(double value) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << value;
  return out.str();
}

// A field of /proc/<pid>/status in kB ("VmRSS", "VmHWM"); nothing once the process is gone.
std::optional<std::uint64_t> status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(field + ":")) return std::stoull(line.substr(field.size() + 1));
  return std::nullopt;
}

// The server's `metric server_<name> <value> <unit>` lines, by name.
std::map<std::string, double> server_metrics(const std::string& output) {
  std::map<std::string, double> values;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string tag, name;
    double value = 0;
    if (words >> tag >> name >> value && tag == "metric" && name.starts_with("server_"))
      values[name.substr(7)] = value;
  }
  return values;
}

// Lets this process hold the waves of connections it opens.
void raise_own_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

// The checks, each printed when it fails.
class Checks {
 public:
  void require(bool ok, const std::string& what) {
    ++count_;
    if (ok) return;
    ++failed_;
    std::cerr << "failed: " << what << '\n';
  }
  [[nodiscard]] int exit_code() const {
    if (failed_ == 0) return 0;
    std::cerr << "error: " << failed_ << " of " << count_ << " checks failed\n";
    return 1;
  }

 private:
  int count_ = 0;
  int failed_ = 0;
};

// Resident memory of the server while the clients run, sampled every 20 ms.
class RssSampler {
 public:
  RssSampler(pid_t pid, std::uint64_t abort_kb, service::ServerProcess& server)
      : thread_([this, pid, abort_kb, &server] {
          while (!stop_) {
            if (const auto kb = status_kb(pid, "VmRSS")) {
              peak_kb_ = std::max<std::uint64_t>(peak_kb_, *kb);
              if (*kb > abort_kb && !aborted_.exchange(true)) server.kill();
            }
            std::this_thread::sleep_for(20ms);
          }
        }) {}
  ~RssSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] std::uint64_t peak_kb() const { return peak_kb_; }
  [[nodiscard]] bool aborted() const { return aborted_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<std::uint64_t> peak_kb_{0};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string spawn;
  std::int64_t fd_limit = 256, flood = 300, good_connections = 8, outstanding = 8, non_readers = 2;
  double seconds = 12, rss_limit_mb = 100, abort_rss_mb = 2048, idle_s = 2, frame_s = 1;
  double flood_every_s = 4;
  CLI::App app{
      "The micro-batch service under hostile clients while well-behaved ones are served "
      "(docs/service.md). Flags after '--' go to the spawned server.",
      "service_hostile"};
  app.add_option("--spawn", spawn, "the server executable to start (micro_batch_service)")
      ->required()
      ->check(examples::non_empty());
  app.add_option("--seconds", seconds, "how long the clients run")
      ->check(examples::number_in(1, 600));
  app.add_option("--fd-limit", fd_limit,
                 "the server's RLIMIT_NOFILE (as ulimit -n); 0: this process's")
      ->check(examples::integer_in(0, 1 << 20));
  app.add_option("--flood", flood, "idle connections per wave: more than the server's cap")
      ->check(examples::integer_in(0, 100'000));
  app.add_option("--flood-every-s", flood_every_s, "a wave of idle connections this often")
      ->check(examples::number_in(0.1, 600));
  app.add_option("--good-connections", good_connections, "well-behaved connections")
      ->check(examples::integer_in(1, 256));
  app.add_option("--outstanding", outstanding, "requests each keeps in flight")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--non-readers", non_readers, "clients that never read their answers")
      ->check(examples::integer_in(0, 64));
  app.add_option("--idle-timeout-s", idle_s, "given to the server as --idle-timeout-s")
      ->check(examples::number_in(0.1, 600));
  app.add_option("--frame-timeout-s", frame_s, "given to the server as --frame-timeout-s")
      ->check(examples::number_in(0.1, 600));
  app.add_option("--rss-limit-mb", rss_limit_mb, "the server's peak resident memory allowed")
      ->check(examples::number_in(1, 1e6));
  app.add_option("--abort-rss-mb", abort_rss_mb,
                 "kill the server if its resident memory passes this (a runaway old build)")
      ->check(examples::number_in(1, 1e6));
  std::vector<std::string> server_args;  // after '--'
  if (const auto exit_code = examples::parse(app, argc, argv, 2, &server_args)) return *exit_code;

  try {
    raise_own_descriptor_limit();
    const auto idle = std::chrono::milliseconds(static_cast<std::int64_t>(idle_s * 1000));
    const auto frame = std::chrono::milliseconds(static_cast<std::int64_t>(frame_s * 1000));
    const auto slack = 5s;  // a busy CI machine: sweeps and handlers run late
    std::vector<std::string> args{"--port",
                                  "0",
                                  "--idle-timeout-s",
                                  std::to_string(idle_s),
                                  "--frame-timeout-s",
                                  std::to_string(frame_s)};
    args.insert(args.end(), server_args.begin(), server_args.end());
    service::ServerProcess server(spawn, args, static_cast<rlim_t>(fd_limit));
    const std::uint16_t port = server.wait_listening(30s);
    RssSampler rss(server.pid(), static_cast<std::uint64_t>(abort_rss_mb * 1024), server);

    // Payloads of 0 to 512 bytes, some empty (a batch of only empty ones once crashed UBSan).
    const service::RequestPool pool(64, 0, 512, 4);
    service::GoodClients good(port, pool, static_cast<std::size_t>(good_connections),
                              static_cast<std::size_t>(outstanding));
    const auto t0 = HostileClock::now();
    const auto end = t0 + std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
    service::GoodResult good_result;
    service::Ends lazy_ends, flood_ends, malformed_ends, slow_ends;
    service::NonReaders lazy(port, static_cast<std::size_t>(non_readers));
    service::IdleFlood idle_flood(
        port, static_cast<std::size_t>(flood),
        std::chrono::milliseconds(static_cast<std::int64_t>(flood_every_s * 1000)), idle, slack);
    service::MalformedFrames malformed(port, 100ms, frame + slack);
    service::SlowClients slow(port, 250ms, frame / 4, frame + slack);
    {
      std::vector<std::jthread> threads;
      threads.emplace_back([&] { good_result = good.run(end, 20s); });
      threads.emplace_back([&] { lazy_ends = lazy.run(end); });
      threads.emplace_back([&] { flood_ends = idle_flood.run(end - 1s); });
      threads.emplace_back([&] { malformed_ends = malformed.run(end); });
      threads.emplace_back([&] { slow_ends = slow.run(end); });
    }
    const double ran_s = std::chrono::duration<double>(HostileClock::now() - t0).count();
    const std::uint64_t hwm_kb = status_kb(server.pid(), "VmHWM").value_or(0);
    rss.stop();
    server.terminate();
    const int status = server.wait(30s);
    const auto counters = server_metrics(server.output());
    const auto counter = [&](const std::string& name) {
      const auto it = counters.find(name);
      return it == counters.end() ? -1.0 : it->second;
    };

    metric("seconds", ran_s, "s");
    metric("good_sent", double(good_result.sent), "count");
    metric("good_answered", double(good_result.answered), "count");
    metric("good_lost", double(good_result.lost), "count");
    metric("good_wrong", double(good_result.wrong), "count");
    metric("server_rss_peak_mb", double(rss.peak_kb()) / 1024, "MB");
    metric("server_vmhwm_mb", double(hwm_kb) / 1024, "MB");
    metric("non_reader_mb_sent", double(lazy.bytes_sent()) / 1e6, "MB");
    metric("non_readers_closed", double(lazy_ends.closed), "count");
    metric("flood_waves", double(idle_flood.waves()), "count");
    metric("flood_refused", double(flood_ends.refused), "count");
    metric("flood_idle_closed", double(flood_ends.closed), "count");
    metric("flood_unanswered", double(flood_ends.unanswered), "count");
    metric("malformed_closed", double(malformed_ends.closed), "count");
    metric("malformed_refused", double(malformed_ends.refused), "count");
    metric("malformed_unanswered", double(malformed_ends.unanswered), "count");
    metric("slow_closed", double(slow_ends.closed), "count");
    metric("slow_refused", double(slow_ends.refused), "count");
    metric("slow_unanswered", double(slow_ends.unanswered), "count");
    std::cout << server.output() << std::flush;

    Checks check;
    check.require(ran_s >= seconds, "the clients ran for --seconds");
    check.require(!rss.aborted(), "the server's resident memory stayed below --abort-rss-mb");
    const double peak_mb = double(std::max<std::uint64_t>(hwm_kb, rss.peak_kb())) / 1024;
    check.require(peak_mb < rss_limit_mb, "the server's peak resident memory (" +
                                              one_decimal(peak_mb) + " MB) is under " +
                                              one_decimal(rss_limit_mb) + " MB");
    check.require(good_result.answered > 0 && good_result.lost == 0 && good_result.wrong == 0 &&
                      good_result.broken == 0,
                  "every well-behaved request answered correctly (" +
                      std::to_string(good_result.lost) + " lost, " +
                      std::to_string(good_result.wrong) + " wrong, " +
                      std::to_string(good_result.broken) + " connections broken)");
    check.require(non_readers == 0 || counter("write_pauses") > 0,
                  "the server stopped reading the clients that do not read");
    check.require(flood == 0 || (flood_ends.refused > 0 && flood_ends.closed > 0),
                  "idle waves: some refused at the cap, the rest closed when idle");
    check.require(flood_ends.unanswered == 0 && flood_ends.no_connection == 0,
                  "idle waves: no connection left unanswered (" +
                      std::to_string(flood_ends.unanswered) + ")");
    check.require(idle_flood.probes_failed() == 0, "a new client served after every wave");
    check.require(malformed_ends.unanswered == 0 && malformed_ends.closed > 0,
                  "every malformed frame closed its connection (" +
                      std::to_string(malformed_ends.unanswered) + " not)");
    check.require(counter("protocol_errors") == double(malformed_ends.closed),
                  "the server counted each malformed frame as a protocol error");
    check.require(slow_ends.unanswered == 0 && slow_ends.closed > 0,
                  "every half-sent or trickled frame closed its connection (" +
                      std::to_string(slow_ends.unanswered) + " not)");
    check.require(counter("frame_timeouts") >= double(slow_ends.closed),
                  "the server counted each of them as a frame timeout");
    check.require(counter("idle_timeouts") >= double(flood_ends.closed),
                  "the server counted each idle connection it closed");
    check.require(counter("lost") == 0, "the server lost no admitted request");
    check.require(status == 0, "the server exited 0 (it exited " + std::to_string(status) + ")");
    return check.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
