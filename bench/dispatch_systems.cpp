#include "dispatch_systems.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <taskflow/algorithm/pipeline.hpp>
#include <taskflow/taskflow.hpp>
#include <thread>
#include <utility>

#include "counting_allocator.hpp"
#include "stage_body.hpp"
#include "swp/async/co.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/runtime.hpp"

namespace swp_bench {

namespace {

using ChainClock = std::chrono::steady_clock;
using ChainCtx = swp::IterContext<std::int64_t>;

// The measurement window, kept by the last stage of every system. Its calls are serial: the
// last stage is serial in every system (an swp lane, a serial_in_order filter, a SERIAL pipe),
// which orders each call after the previous one, so plain fields suffice.
class ChainWindow {
 public:
  explicit ChainWindow(const ChainRun& run) : run_(run) {}

  // Iterations the source yields: the window plus 4 after it, so the chain stays full.
  [[nodiscard]] std::int64_t total() const noexcept {
    return run_.warmup + run_.iters + chain_in_flight;
  }

  // Called once per iteration, after the last stage's body.
  void tick() noexcept {
    ++seen_;
    if (seen_ == run_.warmup) {
      if (run_.capture_sites > 0) start_site_capture(run_.capture_sites);
      allocs_open_ = allocations();
      open_ = ChainClock::now();
    } else if (seen_ == run_.warmup + run_.iters) {
      close_ = ChainClock::now();
      allocs_close_ = allocations();
      stop_site_capture();
    }
  }

  [[nodiscard]] ChainSample sample(System system) const {
    if (seen_ != total())
      throw std::logic_error(std::string("dispatch: ") + system_label(system) + "'s last stage ran " +
                             std::to_string(seen_) + " times for " + std::to_string(total()) +
                             " iterations");
    const double tasks = static_cast<double>(run_.iters) * chain_stages;
    return {std::chrono::duration<double, std::nano>(close_ - open_).count() / tasks,
            static_cast<double>(allocs_close_ - allocs_open_) / tasks};
  }

 private:
  ChainRun run_;
  std::int64_t seen_ = 0;
  ChainClock::time_point open_{}, close_{};
  std::uint64_t allocs_open_ = 0, allocs_close_ = 0;
};

// The same idle time before every measurement of every system, after its set-up: threads
// of the previous measurement (oneTBB's and Taskflow's spin a while after their run returns)
// and of this one's set-up go quiet first.
void chain_settle(const ChainRun& run) {
  std::this_thread::sleep_for(std::chrono::milliseconds(run.settle_ms));
}

ChainSample measure_serial(const ChainRun& run) {
  ChainWindow window(run);
  chain_settle(run);
  for (std::int64_t i = 0; i < window.total(); ++i) {
    for (int s = 0; s < chain_stages; ++s) stage_body(run.steps);
    window.tick();
  }
  return window.sample(System::serial);
}

// (Names are appended, not built with "T" + std::string: g++ 12 warns falsely about that,
// -Wrestrict, GCC PR 105329.)
std::string chain_name(const char* prefix, int n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

// T0..T3 in a chain, one lane each, stages 0..3; synchronous bodies (no coroutine frame).
swp::Plan<ChainCtx> swp_chain_plan(std::uint64_t steps, ChainWindow& window) {
  swp::Plan<ChainCtx> plan;
  for (int s = 0; s < chain_stages; ++s) {
    swp::TaskSchedule schedule{.stage = s, .thread_group = chain_name("lane", s)};
    if (s + 1 < chain_stages) {
      plan.add(chain_name("T", s), [steps](ChainCtx&) { stage_body(steps); }, schedule);
    } else {
      plan.add(
          chain_name("T", s),
          [steps, &window](ChainCtx&) {
            stage_body(steps);
            window.tick();
          },
          schedule);
    }
  }
  // Built in place: moving a Dependency of names into the vector draws a false
  // -Wmaybe-uninitialized from g++ 12 at -O2 (the variant's other alternative).
  for (int s = 1; s < chain_stages; ++s)
    plan.intra_iter_deps.push_back({chain_name("T", s), chain_name("T", s - 1)});
  return plan;
}

// The _next systems' driver: retires every iteration by co_await pipe.next().
template <class Pipe>
swp::Co<void> next_until_end(Pipe& pipe) {
  for (;;) {
    const auto retired = co_await pipe.next();
    if (!retired) co_return;
  }
}

template <class Pipe>
void run_swp_pipe(Pipe& pipe, std::int64_t total, bool by_next) {
  std::int64_t next = 0;
  // Two words, trivially copyable: std::function keeps it inline, so pulling a batch does not
  // allocate.
  auto source = [&next, total]() -> std::optional<std::int64_t> {
    if (next >= total) return std::nullopt;
    return next++;
  };
  if (by_next) {
    pipe.fill_pipeline(source);
    swp::sync_wait(next_until_end(pipe));
  } else {
    pipe.run(source);
  }
}

ChainSample measure_swp(System system, const ChainRun& run) {
  ChainWindow window(run);
  const swp::Plan<ChainCtx> plan = swp_chain_plan(run.steps, window);
  const bool reference = system == System::data_flow_ref || system == System::clock_ref;
  const bool by_next = system == System::data_flow_next || system == System::clock_next;
  swp::Runtime runtime({.backend = swp::Backend::host,
                        .workers = by_next ? run.threads : run.threads - 1,
                        .fast_paths = reference ? swp::FastPaths::none() : run.fast_paths});
  if (system == System::clock || system == System::clock_ref || system == System::clock_next) {
    swp::ClockPipeline<ChainCtx> pipe(runtime, plan);
    chain_settle(run);
    run_swp_pipe(pipe, window.total(), by_next);
  } else {
    swp::DataFlowPipeline<ChainCtx> pipe(runtime, plan, chain_in_flight);
    chain_settle(run);
    run_swp_pipe(pipe, window.total(), by_next);
  }
  return window.sample(system);
}

// A serial_in_order source filter (which also runs stage 0's body) and three serial_in_order
// filters, 4 tokens.
ChainSample measure_tbb(const ChainRun& run) {
  ChainWindow window(run);
  const std::int64_t total = window.total();
  const std::uint64_t steps = run.steps;
  std::int64_t produced = 0;
  auto first = [&produced, total, steps](tbb::flow_control& fc) -> std::int64_t {
    if (produced == total) {
      fc.stop();
      return 0;
    }
    stage_body(steps);
    return produced++;
  };
  auto middle = [steps](std::int64_t i) {
    stage_body(steps);
    return i;
  };
  auto last = [steps, &window](std::int64_t) {
    stage_body(steps);
    window.tick();
  };
  constexpr auto mode = tbb::filter_mode::serial_in_order;
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, run.threads);
  tbb::task_arena arena(static_cast<int>(run.threads));
  arena.initialize();
  chain_settle(run);
  arena.execute([&] {
    tbb::parallel_pipeline(chain_in_flight, tbb::make_filter<void, std::int64_t>(mode, first) &
                                                tbb::make_filter<std::int64_t, std::int64_t>(mode, middle) &
                                                tbb::make_filter<std::int64_t, std::int64_t>(mode, middle) &
                                                tbb::make_filter<std::int64_t, void>(mode, last));
  });
  return window.sample(System::tbb);
}

// A pipe takes its callable by rvalue: a copy each.
template <class F>
tf::Pipe<F> serial_pipe(F callable) {
  return tf::Pipe<F>{tf::PipeType::SERIAL, std::move(callable)};
}

// tf::Pipeline with 4 lines and 4 SERIAL pipes; the first stops the pipeline at the end of
// the source (a token past the last iteration runs no body), as Taskflow's examples do.
ChainSample measure_taskflow(const ChainRun& run) {
  ChainWindow window(run);
  const auto total = static_cast<std::size_t>(window.total());
  const std::uint64_t steps = run.steps;
  auto first = [total, steps](tf::Pipeflow& pf) {
    if (pf.token() == total) {
      pf.stop();
      return;
    }
    stage_body(steps);
  };
  auto middle = [steps](tf::Pipeflow&) { stage_body(steps); };
  auto last = [steps, &window](tf::Pipeflow&) {
    stage_body(steps);
    window.tick();
  };
  tf::Executor executor(run.threads);
  tf::Taskflow taskflow;
  tf::Pipeline pipeline(chain_in_flight, serial_pipe(first), serial_pipe(middle),
                        serial_pipe(middle), serial_pipe(last));
  taskflow.composed_of(pipeline);
  chain_settle(run);
  executor.run(taskflow).wait();
  return window.sample(System::taskflow);
}

}  // namespace

const char* system_label(System system) noexcept {
  switch (system) {
    case System::serial:
      return "serial";
    case System::data_flow:
      return "dataflow";
    case System::clock:
      return "clock";
    case System::tbb:
      return "tbb";
    case System::taskflow:
      return "taskflow";
    case System::data_flow_ref:
      return "dataflow_ref";
    case System::clock_ref:
      return "clock_ref";
    case System::data_flow_next:
      return "dataflow_next";
    case System::clock_next:
      return "clock_next";
  }
  return "?";
}

std::optional<System> system_of_label(std::string_view label) noexcept {
  for (System s : all_systems)
    if (label == system_label(s)) return s;
  for (System s : reference_systems)
    if (label == system_label(s)) return s;
  for (System s : next_systems)
    if (label == system_label(s)) return s;
  return std::nullopt;
}

ChainSample measure_chain(System system, const ChainRun& run) {
  if (run.threads < 1 || run.warmup < 1 || run.iters < 1)
    throw std::invalid_argument("dispatch: threads, warmup and iters must be at least 1");
  switch (system) {
    case System::serial:
      return measure_serial(run);
    case System::data_flow:
    case System::clock:
    case System::data_flow_ref:
    case System::clock_ref:
    case System::data_flow_next:
    case System::clock_next:
      return measure_swp(system, run);
    case System::tbb:
      return measure_tbb(run);
    case System::taskflow:
      return measure_taskflow(run);
  }
  throw std::invalid_argument("dispatch: unknown system");
}

}  // namespace swp_bench
