// swp-lazy-bench: the LazyScheduler's costs, as `metric <name> <value> <unit>` lines
// (docs/lazy.md). Each figure is the median of --rounds timed windows of --calls calls.
//
//   swp-lazy-bench [--calls N] [--rounds N]
//
//   lazy_ns_per_segment           a segment no schedule names (the fast path: no reordering
//                                 needed), trivial body, value returned in a ready Deferred
//   lazy_ns_per_direct_call       the same body called directly (the floor)
//   lazy_ns_per_scheduled_segment two segments of a schedule called in schedule order (a round
//                                 per pair: bookkeeping of a constrained call, nothing stored)
//   lazy_ns_per_materialisation   a held segment: call (stored), then get() runs it

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "metric.hpp"
#include "swp/lazy.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Keeps the optimizer from deleting the measured calls.
volatile std::int64_t sink = 0;

template <class Body>
double ns_per_call(std::int64_t calls, Body&& body) {
  const auto start = Clock::now();
  for (std::int64_t i = 0; i < calls; ++i) body(i);
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
         static_cast<double>(calls);
}

template <class Body>
double median_ns(int rounds, std::int64_t calls, Body&& body) {
  ns_per_call(calls / 10 + 1, body);  // warm-up: caches, frame pools, the allocator
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) samples.push_back(ns_per_call(calls, body));
  return swp_bench::median(samples);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t calls = 1'000'000;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--calls" || arg == "--rounds") && i + 1 < argc) {
      const long long v = std::atoll(argv[++i]);
      if (v < 1) {
        std::fprintf(stderr, "error: %s must be at least 1\n", std::string(arg).c_str());
        return 2;
      }
      if (arg == "--calls")
        calls = v;
      else
        rounds = static_cast<int>(v);
    } else {
      std::fprintf(
          stderr, "error: unknown argument '%s' (usage: swp-lazy-bench [--calls N] [--rounds N])\n",
          argv[i]);
      return 2;
    }
  }

  auto body = [](std::int64_t x) { return x + 1; };
  const double direct = median_ns(rounds, calls, [&](std::int64_t i) { sink = body(i); });

  swp::LazyScheduler free_sched;
  auto seg = free_sched.register_segment("seg", body);
  const double per_segment = median_ns(rounds, calls, [&](std::int64_t i) {
    sink = seg(i).get();
    // The executed order is kept per round; a long program ends rounds, so does the bench.
    if ((i & 1023) == 1023) free_sched.flush();
  });

  swp::LazyScheduler ordered({.schedule = {"a", "b"}});
  auto a = ordered.register_segment("a", body);
  auto b = ordered.register_segment("b", body);
  const double per_scheduled = median_ns(rounds, calls / 2,
                                         [&](std::int64_t i) {
                                           sink = b(a(i)).get();
                                           ordered.flush();
                                         }) /
                               2;

  swp::LazyScheduler held;
  auto pre = held.register_segment("pre", body);
  (void)held.register_segment("target", [] {});
  held.register_segment_pre_hook("target", "pre");
  const double per_materialisation = median_ns(rounds, calls, [&](std::int64_t i) {
    auto d = pre(i);  // stored: its target is never called in this round
    sink = d.get();   // materialised here
    held.flush();
  });

  swp_bench::metric("lazy_ns_per_direct_call", direct, "ns");
  swp_bench::metric("lazy_ns_per_segment", per_segment, "ns");
  swp_bench::metric("lazy_ns_per_scheduled_segment", per_scheduled, "ns");
  swp_bench::metric("lazy_ns_per_materialisation", per_materialisation, "ns");
  return 0;
}
