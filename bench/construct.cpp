#include "construct.hpp"

#include <malloc.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <swp/engine.hpp>

#include "metric.hpp"

namespace swp_bench {
namespace {

using Ctx = swp::IterContext<int, swp::NoFields>;

constexpr std::array<int, 2> sizes{10'000, 100'000};
constexpr std::array<const char*, 2> engines{"dataflow", "clock"};

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Bytes the heap has handed out (in use, mmapped blocks included).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Names in an order unrelated to the declaration order (ties broken by name are exercised).
std::string task_name(int i, int n) { return "t" + std::to_string((i * 7919L) % n) + "_" + std::to_string(i); }

swp::Plan<Ctx> make_plan(int n, bool reads) {
  swp::Plan<Ctx> plan;
  std::optional<swp::Output<void>> previous;
  for (int i = 0; i < n; ++i) {
    swp::TaskSchedule schedule{.stage = static_cast<int>(static_cast<long>(i) * 4 / n),
                               .stream = "s" + std::to_string(i % 8),
                               .thread_group = "g" + std::to_string(i % 8)};
    previous = reads && previous
                   ? plan.add(task_name(i, n), [](Ctx&) {}, std::move(schedule), swp::reads(*previous))
                   : plan.add(task_name(i, n), [](Ctx&) {}, std::move(schedule));
  }
  return plan;
}

// One size's measurements over the rounds.
struct Times {
  std::vector<double> plan, make[2], destroy[2], copy;
  std::size_t bytes[2] = {0, 0};  // the pipelines' heap bytes (the last round's)
};

// Builds and destroys one pipeline, timed apart; returns the heap bytes it held.
template <class Pipe, class... Args>
std::size_t time_pipeline(swp::Runtime& runtime, const swp::Plan<Ctx>& plan,
                          std::vector<double>& make, std::vector<double>& destroy, Args... args) {
  const std::size_t before = heap_in_use();
  const double t0 = cpu_ms();
  std::optional<Pipe> pipe(std::in_place, runtime, plan, args...);
  const double t1 = cpu_ms();
  const std::size_t bytes = heap_in_use() - before;
  const double t2 = cpu_ms();
  pipe.reset();
  make.push_back(t1 - t0);
  destroy.push_back(cpu_ms() - t2);
  return bytes;
}

// What memory alone costs at this size: copying as many bytes as a pipeline of it holds,
// between buffers already faulted in. A construction writes its pipeline once and reads its
// plan; at 10k tasks both fit in the caches, at 100k they do not.
double time_copy(std::size_t bytes) {
  static std::vector<char> from, to;
  from.assign(bytes, 1);
  to.assign(bytes, 0);
  const double t0 = cpu_ms();
  std::memcpy(to.data(), from.data(), bytes);
  asm volatile("" : : "r"(to.data()) : "memory");
  return cpu_ms() - t0;
}

void measure(swp::Runtime& runtime, int n, bool reads, bool clock_first, Times& t) {
  const double t0 = cpu_ms();
  const swp::Plan<Ctx> plan = make_plan(n, reads);
  t.plan.push_back(cpu_ms() - t0);
  const auto dataflow = [&] {
    t.bytes[0] =
        time_pipeline<swp::DataFlowPipeline<Ctx>>(runtime, plan, t.make[0], t.destroy[0], 2);
  };
  const auto clock = [&] {
    t.bytes[1] = time_pipeline<swp::ClockPipeline<Ctx>>(runtime, plan, t.make[1], t.destroy[1]);
  };
  // The engine after the plan finds it warmer: each goes first every other round.
  if (clock_first) {
    clock();
    dataflow();
  } else {
    dataflow();
    clock();
  }
}

}  // namespace

void run_construct(const ConstructOptions& options) {
  for (const bool reads : {false, true}) {
    const std::string shape = reads ? "reads" : "independent";
    swp::Runtime runtime({.backend = swp::Backend::sim});
    std::map<int, Times> times;
    // Rounds interleave the sizes (and alternate which goes first), so a slow stretch of the
    // machine falls on both; each size's copy follows its constructions.
    for (int r = 0; r < options.rounds; ++r) {
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        const int n = sizes[(k + static_cast<std::size_t>(r)) % sizes.size()];
        Times& t = times[n];
        measure(runtime, n, reads, r % 2 == 1, t);
        t.copy.push_back(time_copy(std::max(t.bytes[0], t.bytes[1])));
      }
    }
    for (const int n : sizes) {
      const std::string size = std::to_string(n / 1000) + "k";
      const Times& t = times[n];
      metric("construct_plan_" + shape + "_" + size + "_ms", median(t.plan), "ms");
      for (std::size_t e = 0; e < engines.size(); ++e) {
        const std::string what = std::string(engines[e]) + "_" + shape + "_" + size;
        metric("construct_" + what + "_ms", median(t.make[e]), "ms");
        metric("destroy_" + what + "_ms", median(t.destroy[e]), "ms");
        metric("bytes_per_task_" + what, static_cast<double>(t.bytes[e]) / n, "B");
      }
      metric("construct_copy_" + shape + "_" + size + "_ms", median(t.copy), "ms");
    }
    const Times& small = times[sizes[0]];
    const Times& large = times[sizes[1]];
    metric("construct_plan_" + shape + "_growth", median(large.plan) / median(small.plan), "ratio");
    for (std::size_t e = 0; e < engines.size(); ++e)
      metric("construct_" + std::string(engines[e]) + "_" + shape + "_growth",
             median(large.make[e]) / median(small.make[e]), "ratio");
    metric("construct_copy_" + shape + "_growth", median(large.copy) / median(small.copy), "ratio");
  }
}

}  // namespace swp_bench
