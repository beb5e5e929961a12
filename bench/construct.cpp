#include "construct.hpp"

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

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
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

struct Times {
  std::vector<double> plan, make[2], destroy[2];
};

template <class Pipe, class... Args>
void time_pipeline(swp::Runtime& runtime, const swp::Plan<Ctx>& plan, std::vector<double>& make,
                   std::vector<double>& destroy, Args... args) {
  const double t0 = cpu_ms();
  std::optional<Pipe> pipe(std::in_place, runtime, plan, args...);
  const double t1 = cpu_ms();
  pipe.reset();
  make.push_back(t1 - t0);
  destroy.push_back(cpu_ms() - t1);
}

}  // namespace

void run_construct(const ConstructOptions& options) {
  const char* engines[2] = {"dataflow", "clock"};
  for (const bool reads : {false, true}) {
    const std::string shape = reads ? "reads" : "independent";
    std::map<int, double> plan_ms, make_ms[2];
    for (const int n : {10'000, 100'000}) {
      const std::string size = std::to_string(n / 1000) + "k";
      Times t;
      swp::Runtime runtime({.backend = swp::Backend::sim});
      for (int r = 0; r < options.rounds; ++r) {
        const double t0 = cpu_ms();
        const swp::Plan<Ctx> plan = make_plan(n, reads);
        t.plan.push_back(cpu_ms() - t0);
        time_pipeline<swp::DataFlowPipeline<Ctx>>(runtime, plan, t.make[0], t.destroy[0], 2);
        time_pipeline<swp::ClockPipeline<Ctx>>(runtime, plan, t.make[1], t.destroy[1]);
      }
      plan_ms[n] = median(t.plan);
      metric("construct_plan_" + shape + "_" + size + "_ms", plan_ms[n], "ms");
      for (int e = 0; e < 2; ++e) {
        make_ms[e][n] = median(t.make[e]);
        metric("construct_" + std::string(engines[e]) + "_" + shape + "_" + size + "_ms", make_ms[e][n], "ms");
        metric("destroy_" + std::string(engines[e]) + "_" + shape + "_" + size + "_ms", median(t.destroy[e]), "ms");
      }
    }
    metric("construct_plan_" + shape + "_growth", plan_ms[100'000] / plan_ms[10'000], "ratio");
    for (int e = 0; e < 2; ++e)
      metric("construct_" + std::string(engines[e]) + "_" + shape + "_growth",
             make_ms[e][100'000] / make_ms[e][10'000], "ratio");
  }
}

}  // namespace swp_bench
