#include "idle.hpp"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include <swp/engine.hpp>

#include "metric.hpp"

namespace swp_bench {
namespace {

using IdleCtx = swp::IterContext<std::int64_t, swp::NoFields>;

double process_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
  };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

// Sleeps `ms` and prints the CPU the process used meanwhile, per second.
void measure_idle(const std::string& state, int ms) {
  const double before = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  metric("idle_cpu_ms_per_s_" + state, (process_cpu_ms() - before) * 1000.0 / ms, "ms/s");
}

swp::Plan<IdleCtx> chain_plan() {
  swp::Plan<IdleCtx> plan;
  std::optional<swp::Output<void>> previous;
  for (int s = 0; s < 4; ++s) {
    swp::TaskSchedule schedule{.stage = s, .thread_group = "idle_lane" + std::to_string(s)};
    const std::string name = "idle_task" + std::to_string(s);
    previous = previous ? plan.add(name, [](IdleCtx&) {}, std::move(schedule), swp::reads(*previous))
                        : plan.add(name, [](IdleCtx&) {}, std::move(schedule));
  }
  return plan;
}

template <class Pipe, class... Args>
void measure_engine(swp::Runtime& runtime, const std::string& engine, int ms, Args... args) {
  const swp::Plan<IdleCtx> plan = chain_plan();
  Pipe pipe(runtime, plan, args...);
  constexpr std::int64_t driven = 10'000;
  std::int64_t next = 0;
  pipe.run([&]() -> std::optional<std::int64_t> {
    return next < driven ? std::optional(next++) : std::nullopt;
  });
  measure_idle(engine + "_between_runs", ms);
  // A run in flight whose caller went away: the source never ends until told.
  std::atomic<bool> stop{false};
  next = 0;
  pipe.fill_pipeline([&]() -> std::optional<std::int64_t> {
    if (stop.load()) return std::nullopt;
    return next++;
  });
  for (std::int64_t i = 0; i < driven; ++i) (void)pipe.progress();
  measure_idle(engine + "_away", ms);
  stop.store(true);
  pipe.drain();
}

}  // namespace

void run_idle(const IdleOptions& options) {
  swp::Runtime runtime({.backend = swp::Backend::host, .workers = options.workers});
  metric("idle_workers", options.workers, "count");
  measure_idle("fresh", options.ms);
  measure_engine<swp::DataFlowPipeline<IdleCtx>>(runtime, "dataflow", options.ms, 4);
  measure_engine<swp::ClockPipeline<IdleCtx>>(runtime, "clock", options.ms);
}

}  // namespace swp_bench
