#include "occupancy.hpp"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <swp/engine.hpp>
#include <taskflow/algorithm/pipeline.hpp>
#include <taskflow/taskflow.hpp>
#include <thread>
#include <vector>

#include "busy_core.hpp"
#include "metric.hpp"
#include "stage_body.hpp"

namespace swp_bench {
namespace {

using OccClock = std::chrono::steady_clock;
using OccCtx = swp::IterContext<std::int64_t, swp::NoFields>;
constexpr int occ_stages = 4;
constexpr int occ_in_flight = 4;

enum class OccSystem { data_flow, clock, taskflow };

const char* occ_label(OccSystem s) {
  switch (s) {
    case OccSystem::data_flow:
      return "dataflow";
    case OccSystem::clock:
      return "clock";
    case OccSystem::taskflow:
      return "taskflow";
  }
  return "?";
}

// One body's record. Each (iteration, stage) has its own record, written by the one thread
// that runs it, and read after the run: no synchronization beyond the run's end.
struct OccBody {
  int thread = -1;
  int cpu = -1, end_cpu = -1;  // sched_getcpu() at the start and at the end
  OccClock::time_point start, end;
};

// The records of one measurement. A thread's index is handed out at its first body in this
// measurement (the generation tells a thread that its index belongs to an earlier one).
class OccRecorder {
 public:
  OccRecorder(std::int64_t iterations, std::uint64_t steps)
      : steps_(steps),
        bodies_(static_cast<std::size_t>(iterations) * occ_stages),
        retired_(static_cast<std::size_t>(iterations)),
        generation_(++last_generation) {}

  void body(int stage, std::int64_t iter) noexcept {
    OccBody& r = bodies_[static_cast<std::size_t>(iter) * occ_stages + stage];
    r.thread = thread_index();
    r.cpu = sched_getcpu();
    r.start = OccClock::now();
    stage_body(steps_);
    r.end = OccClock::now();
    r.end_cpu = sched_getcpu();
  }
  void retired(std::int64_t iter) noexcept {
    retired_[static_cast<std::size_t>(iter)] = OccClock::now();
  }

  [[nodiscard]] const OccBody& at(std::int64_t iter, int stage) const {
    return bodies_[static_cast<std::size_t>(iter) * occ_stages + stage];
  }
  [[nodiscard]] OccClock::time_point retired_at(std::int64_t iter) const {
    return retired_[static_cast<std::size_t>(iter)];
  }

 private:
  int thread_index() noexcept {
    thread_local unsigned seen_generation = 0;
    thread_local int index = -1;
    if (seen_generation != generation_) {
      seen_generation = generation_;
      index = threads_.fetch_add(1, std::memory_order_relaxed);
    }
    return index;
  }

  static inline std::atomic<unsigned> last_generation{0};
  std::uint64_t steps_;
  std::vector<OccBody> bodies_;
  std::vector<OccClock::time_point> retired_;
  unsigned generation_;
  std::atomic<int> threads_{0};
};

struct OccSample {
  double busy_share = 0, same_stage_share = 0, carried_share = 0, ns_per_task = 0,
         start_lag_ns = 0;
  // Beside a co-runner: the share of the body time that started on its core (shared, so a
  // body there runs at about half speed), and of the bodies that ended on another core.
  double shared_core_share = 0, migrated_share = 0;
  // Context switches of the process (voluntary: a thread slept; involuntary: preempted) per
  // task, over the whole measurement: its threads' start and end, the settle and the warm-up
  // included (a few dozen switches beside the window's).
  double voluntary_switches = 0, involuntary_switches = 0;
  std::optional<double> retire_lag_ns;
};

double occ_ns_between(OccClock::time_point a, OccClock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// The window is iterations [first, last): after the warm-up, before the last 4 (the chain is
// full throughout).
OccSample occ_analyse(const OccRecorder& rec, std::int64_t first, std::int64_t last,
                      unsigned threads, bool retires, int shared_core) {
  OccClock::time_point open = rec.at(first, 0).start, close = rec.at(first, 0).end;
  double busy_ns = 0, shared_ns = 0;
  std::size_t migrated = 0;
  struct Run {
    OccClock::time_point start;
    int thread, stage;
    std::int64_t iter;
    bool operator<(const Run& o) const { return start < o.start; }
  };
  std::vector<Run> runs;
  std::vector<double> lags;
  // A later stage's body may start once its producer (the stage before) and the same stage's
  // body of the iteration before ended, in every system alike; how long after that it starts
  // is what dispatching it cost (a thread to notice it, a period to release it, a queue to
  // move it). Stage 0 also waits for a free line or slot: left out.
  double start_lag_ns = 0;
  std::size_t started = 0;
  for (std::int64_t i = first; i < last; ++i) {
    for (int s = 0; s < occ_stages; ++s) {
      const OccBody& r = rec.at(i, s);
      open = std::min(open, r.start);
      close = std::max(close, r.end);
      busy_ns += occ_ns_between(r.start, r.end);
      if (r.cpu == shared_core) shared_ns += occ_ns_between(r.start, r.end);
      if (r.cpu != r.end_cpu) ++migrated;
      runs.push_back({r.start, r.thread, s, i});
      if (s > 0 && i > first) {
        const OccClock::time_point ready = std::max(rec.at(i, s - 1).end, rec.at(i - 1, s).end);
        start_lag_ns += occ_ns_between(ready, r.start);
        ++started;
      }
    }
    if (retires) lags.push_back(occ_ns_between(rec.at(i, occ_stages - 1).end, rec.retired_at(i)));
  }
  std::sort(runs.begin(), runs.end());
  // Per thread, the body before: the same stage again (a lane's backlog), or the same
  // iteration's next stage (the thread carries its iteration along, as a Taskflow line its token).
  std::map<int, const Run*> previous;
  std::size_t same = 0, carried = 0;
  for (const Run& run : runs) {
    const Run*& before = previous[run.thread];
    if (before != nullptr && before->stage == run.stage) ++same;
    if (before != nullptr && before->iter == run.iter && before->stage + 1 == run.stage) ++carried;
    before = &run;
  }
  const double span = occ_ns_between(open, close);
  OccSample sample;
  sample.busy_share = busy_ns / (span * threads);
  sample.shared_core_share = shared_ns / busy_ns;
  sample.migrated_share = static_cast<double>(migrated) / static_cast<double>(runs.size());
  sample.same_stage_share = static_cast<double>(same) / static_cast<double>(runs.size());
  sample.carried_share = static_cast<double>(carried) / static_cast<double>(runs.size());
  sample.ns_per_task = span / static_cast<double>(runs.size());
  sample.start_lag_ns = started == 0 ? 0 : start_lag_ns / static_cast<double>(started);
  if (retires) sample.retire_lag_ns = median(std::move(lags));
  return sample;
}

swp::Plan<OccCtx> occupancy_plan(OccRecorder& rec) {
  swp::Plan<OccCtx> plan;
  for (int s = 0; s < occ_stages; ++s) {
    swp::TaskSchedule schedule{.stage = s, .thread_group = "occupancy_lane" + std::to_string(s)};
    plan.add(
        "O" + std::to_string(s), [s, &rec](OccCtx& ctx) { rec.body(s, ctx.iter_idx); },
        std::move(schedule));
  }
  for (int s = 1; s < occ_stages; ++s)
    plan.intra_iter_deps.push_back({"O" + std::to_string(s), "O" + std::to_string(s - 1)});
  return plan;
}

void occ_settle() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

template <class Pipe>
void occ_run_pipe(Pipe& pipe, OccRecorder& rec, std::int64_t total) {
  pipe.on_retire([&rec](const OccCtx& ctx) { rec.retired(ctx.iter_idx); });
  std::int64_t next = 0;
  occ_settle();
  pipe.run([&next, total]() -> std::optional<std::int64_t> {
    if (next >= total) return std::nullopt;
    return next++;
  });
}

OccSample occ_run_system(OccSystem system, unsigned threads, std::uint64_t steps,
                         std::int64_t warmup, std::int64_t window, int shared_core) {
  const std::int64_t total = warmup + window + occ_in_flight;
  OccRecorder rec(total, steps);
  if (system == OccSystem::taskflow) {
    tf::Executor executor(threads);
    tf::Taskflow taskflow;
    const auto limit = static_cast<std::size_t>(total);
    auto pipe = [&rec](int stage) {
      return tf::Pipe{tf::PipeType::SERIAL, [&rec, stage](tf::Pipeflow& pf) {
                        rec.body(stage, static_cast<std::int64_t>(pf.token()));
                      }};
    };
    tf::Pipeline pipeline(occ_in_flight,
                          tf::Pipe{tf::PipeType::SERIAL,
                                   [&rec, limit](tf::Pipeflow& pf) {
                                     if (pf.token() == limit) {
                                       pf.stop();
                                       return;
                                     }
                                     rec.body(0, static_cast<std::int64_t>(pf.token()));
                                   }},
                          pipe(1), pipe(2), pipe(3));
    taskflow.composed_of(pipeline);
    occ_settle();
    executor.run(taskflow).wait();
    return occ_analyse(rec, warmup, warmup + window, threads, false, shared_core);
  }
  const swp::Plan<OccCtx> plan = occupancy_plan(rec);
  swp::Runtime runtime({.backend = swp::Backend::host, .workers = threads - 1});
  if (system == OccSystem::clock) {
    swp::ClockPipeline<OccCtx> pipe(runtime, plan);
    occ_run_pipe(pipe, rec, total);
  } else {
    swp::DataFlowPipeline<OccCtx> pipe(runtime, plan, occ_in_flight);
    occ_run_pipe(pipe, rec, total);
  }
  return occ_analyse(rec, warmup, warmup + window, threads, true, shared_core);
}

OccSample occ_measure(OccSystem system, unsigned threads, std::uint64_t steps,
                      std::int64_t window, int shared_core) {
  const std::int64_t warmup = std::max<std::int64_t>(window / 10, 100);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  OccSample sample = occ_run_system(system, threads, steps, warmup, window, shared_core);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  const auto tasks = static_cast<double>((warmup + window + occ_in_flight) * occ_stages);
  sample.voluntary_switches = static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / tasks;
  sample.involuntary_switches = static_cast<double>(after.ru_nivcsw - before.ru_nivcsw) / tasks;
  return sample;
}

std::string occ_work_tag(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", w);
  return std::string(buf) + "us";
}

}  // namespace

void run_occupancy(const OccupancyOptions& o) {
  if (o.threads < 1) throw std::invalid_argument("occupancy: --threads must be at least 1");
  for (double w : o.work_us)
    if (!(w > 0)) throw std::invalid_argument("occupancy: every --work-us must be above 0");
  const double steps_per_us = calibrate_steps_per_us();  // before any co-runner
  std::unique_ptr<BusyCore> co_runner;
  if (o.co_runner) co_runner = std::make_unique<BusyCore>();
  metric("busy_core", o.co_runner ? 1 : 0, "flag");
  metric("steps_per_us", steps_per_us, "count");
  constexpr OccSystem systems[] = {OccSystem::data_flow, OccSystem::clock, OccSystem::taskflow};
  std::map<std::string, std::vector<double>> busy, same, carried, ns, lag, start_lag, shared,
      migrated, voluntary, involuntary;
  const int shared_core = co_runner ? co_runner->core() : -1;
  for (int round = 0; round < o.rounds; ++round) {
    for (double w : o.work_us) {
      const auto steps = static_cast<std::uint64_t>(w * steps_per_us);
      const auto window = static_cast<std::int64_t>(o.work_ms * 1000.0 / (w * occ_stages));
      for (std::size_t k = 0; k < std::size(systems); ++k) {
        const OccSystem s = systems[(k + static_cast<std::size_t>(round)) % std::size(systems)];
        const std::string tag = std::string(occ_label(s)) + (o.co_runner ? "_corunner_" : "_") +
                                occ_work_tag(w) + "_" + std::to_string(o.threads) + "t";
        const OccSample sample =
            occ_measure(s, o.threads, steps, std::max<std::int64_t>(window, 100), shared_core);
        std::fprintf(stderr,
                     "occupancy round %d %s: busy %.3f same-stage %.3f carried %.3f start lag "
                     "%.0f ns, ns/task %.1f, shared core %.3f, migrated %.3f\n",
                     round, tag.c_str(), sample.busy_share, sample.same_stage_share,
                     sample.carried_share, sample.start_lag_ns, sample.ns_per_task,
                     sample.shared_core_share, sample.migrated_share);
        busy[tag].push_back(sample.busy_share);
        same[tag].push_back(sample.same_stage_share);
        carried[tag].push_back(sample.carried_share);
        ns[tag].push_back(sample.ns_per_task);
        start_lag[tag].push_back(sample.start_lag_ns);
        if (shared_core >= 0) shared[tag].push_back(sample.shared_core_share);
        migrated[tag].push_back(sample.migrated_share);
        voluntary[tag].push_back(sample.voluntary_switches);
        involuntary[tag].push_back(sample.involuntary_switches);
        if (sample.retire_lag_ns) lag[tag].push_back(*sample.retire_lag_ns);
      }
    }
  }
  for (auto& [tag, values] : busy) metric("busy_share_" + tag, median(values), "ratio");
  for (auto& [tag, values] : same) metric("same_stage_share_" + tag, median(values), "ratio");
  for (auto& [tag, values] : carried) metric("carried_share_" + tag, median(values), "ratio");
  for (auto& [tag, values] : lag) metric("retire_lag_ns_" + tag, median(values), "ns");
  for (auto& [tag, values] : start_lag) metric("start_lag_ns_" + tag, median(values), "ns");
  for (auto& [tag, values] : shared) metric("shared_core_share_" + tag, median(values), "ratio");
  for (auto& [tag, values] : migrated) metric("migrated_share_" + tag, median(values), "ratio");
  for (auto& [tag, values] : voluntary)
    metric("voluntary_switches_per_task_" + tag, median(values), "count");
  for (auto& [tag, values] : involuntary)
    metric("involuntary_switches_per_task_" + tag, median(values), "count");
  for (auto& [tag, values] : ns) metric("ns_per_task_" + tag, median(values), "ns");
}

}  // namespace swp_bench
