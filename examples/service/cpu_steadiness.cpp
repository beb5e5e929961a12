// cpu_steadiness: how steadily this machine's CPUs run. One thread per CPU repeats a fixed
// chunk of serial arithmetic (~200 µs) for --seconds and times each chunk in its own thread
// CPU time, so that waiting for a CPU does not count, only a CPU that runs slower than it
// did (a busy host under a virtual machine, frequency changes). Reports the 10 ms windows
// whose chunks took on average --slow times the median or longer: a service at 80% load
// whose CPUs lose a third of their speed for tens of milliseconds builds a queue that its 20%
// headroom drains for several times as long (docs/service.md, Finding a tail).
//
//   cpu_steadiness [--seconds 20] [--threads N] [--slow 1.3]
//
// Prints `metric steadiness_<name> <value> <unit>` lines; exit 0, 2 for a bad flag.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "thread_times.hpp"

namespace {

// Serial multiplies, as the service's digest: the time is the core's, not the memory's.
std::uint64_t chunk(std::uint64_t seed, std::int64_t n) {
  std::uint64_t h = seed | 1;
  for (std::int64_t i = 0; i < n; ++i) h = (h ^ std::uint64_t(i)) * 0x100000001b3ULL;
  return h;
}

double thread_cpu_us() {
  return std::chrono::duration<double, std::micro>(service::ThreadTimes::cpu_time()).count();
}

volatile std::uint64_t kept;  // the chunks' results, so that the compiler keeps the work

struct Window {
  double start_s;  // since the run began
  double slowdown;
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20, slow = 1.3;
  std::int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  CLI::App app{
      "How steadily the CPUs run: chunks of serial work timed in thread CPU time on "
      "every CPU at once; 10 ms windows slower than --slow x the median are reported "
      "(docs/service.md).",
      "cpu_steadiness"};
  app.add_option("--seconds", seconds, "how long to measure")
      ->check(examples::number_in(0.1, 3600));
  app.add_option("--threads", threads, "threads, one per CPU by default")
      ->check(examples::integer_in(1, 1024));
  app.add_option("--slow", slow, "a window is slow when its chunks take this times the median")
      ->check(examples::number_in(1.01, 100));
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;

  // Calibrate a chunk of ~200 µs on this thread.
  std::int64_t n = 1'000'000;
  {
    const double a = thread_cpu_us();
    volatile std::uint64_t sink = chunk(1, n);
    (void)sink;
    n = std::max<std::int64_t>(1000, std::int64_t(double(n) * 200.0 / (thread_cpu_us() - a)));
  }

  using Clock = std::chrono::steady_clock;
  const auto begin = Clock::now();
  const auto end = begin + std::chrono::duration<double>(seconds);
  // Per thread: each chunk's start (s since begin) and its CPU time (µs).
  std::vector<std::vector<std::pair<double, double>>> samples(static_cast<std::size_t>(threads));
  std::atomic<std::uint64_t> sink{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < samples.size(); ++t)
    pool.emplace_back([&, t] {
      auto& mine = samples[t];
      mine.reserve(std::size_t(seconds * 6000));
      std::uint64_t h = t;
      for (auto now = Clock::now(); now < end; now = Clock::now()) {
        const double a = thread_cpu_us();
        h = chunk(h, n);
        mine.emplace_back(std::chrono::duration<double>(now - begin).count(), thread_cpu_us() - a);
      }
      sink += h;
    });
  for (auto& t : pool) t.join();

  std::vector<double> all;
  for (const auto& s : samples)
    for (const auto& [at, us] : s) all.push_back(us);
  std::sort(all.begin(), all.end());
  const double median = all.empty() ? 0 : all[all.size() / 2];

  // 10 ms windows per thread; a window is slow when its mean chunk is `slow` × the median.
  const std::size_t per_window =
      std::max<std::size_t>(1, std::size_t(10'000 / std::max(median, 1.0)));
  std::size_t windows = 0;
  std::vector<Window> slow_windows;
  for (const auto& s : samples)
    for (std::size_t i = 0; i + per_window <= s.size(); i += per_window, ++windows) {
      double sum = 0;
      for (std::size_t j = i; j < i + per_window; ++j) sum += s[j].second;
      const double ratio = sum / double(per_window) / median;
      if (ratio >= slow) slow_windows.push_back({s[i].first, ratio});
    }
  // Episodes: slow windows (of any thread) less than 50 ms apart are one episode.
  std::sort(slow_windows.begin(), slow_windows.end(),
            [](const Window& a, const Window& b) { return a.start_s < b.start_s; });
  std::vector<Window> episodes;  // each episode's first window, with its worst slowdown
  double last = -1, worst = 1;
  for (const Window& w : slow_windows) {
    if (last < 0 || w.start_s - last > 0.05) episodes.push_back(w);
    episodes.back().slowdown = std::max(episodes.back().slowdown, w.slowdown);
    last = w.start_s;
    worst = std::max(worst, w.slowdown);
  }
  for (const Window& e : episodes)
    std::cout << "slow from " << std::fixed << std::setprecision(3) << e.start_s << " s, at worst "
              << std::setprecision(2) << e.slowdown << "x\n";
  const auto metric = [](const char* name, double value, const char* unit, int decimals) {
    std::cout << "metric steadiness_" << name << ' ' << std::fixed << std::setprecision(decimals)
              << value << ' ' << unit << '\n';
  };
  metric("threads", double(threads), "count", 0);
  metric("seconds", seconds, "s", 1);
  metric("chunk_us_p50", median, "us", 1);
  metric("chunk_us_p99", all.empty() ? 0 : all[all.size() * 99 / 100], "us", 1);
  metric("windows", double(windows), "count", 0);
  metric("slow_windows", double(slow_windows.size()), "count", 0);
  metric("slow_window_pct", windows ? 100.0 * double(slow_windows.size()) / double(windows) : 0,
         "%", 2);
  metric("episodes", double(episodes.size()), "count", 0);
  metric("episodes_per_minute", double(episodes.size()) * 60 / seconds, "count", 1);
  metric("worst_slowdown", worst, "ratio", 2);
  kept = sink.load();
  return 0;
}
