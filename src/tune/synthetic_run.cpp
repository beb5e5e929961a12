#include "swp/tune/synthetic_run.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_meter.hpp"

#include "swp/device/nvtx_ranges.hpp"
#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace swp {

std::string_view engine_name(EngineKind kind) {
  return kind == EngineKind::data_flow ? "dataflow" : "clock";
}

bool parse_engine(std::string_view name, EngineKind& kind) {
  if (name == "dataflow") {
    kind = EngineKind::data_flow;
  } else if (name == "clock") {
    kind = EngineKind::clock;
  } else {
    return false;
  }
  return true;
}

std::int64_t min_steady_iters(int slots) noexcept { return 2 * std::int64_t{slots} + 2; }

double bound_us_per_iter(const PlanGraph& graph) {
  std::map<std::string, double> device, cpu;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    const auto& c = graph.cost(t);
    device[graph.stream(t)] += c.mean_device_us();
    cpu[graph.lane(t)] += c.cpu_us;
  }
  double bound = 0;
  for (const auto& [name, us] : device) bound = std::max(bound, us);
  for (const auto& [name, us] : cpu) bound = std::max(bound, us);
  return bound;
}

namespace {

using Ctx = IterContext<std::int64_t>;

// Refuses runs whose time could overflow the clock (int64 nanoseconds: 292 years): `runs`
// iterations, each at most every task's CPU and longest device cost one after another.
void check_horizon(const PlanGraph& graph, double runs) {
  double per_iter = 0;
  for (TaskIndex t = 0; t < graph.size(); ++t) {
    const auto& c = graph.cost(t);
    per_iter += c.cpu_us + std::max(c.device_us, c.jitter_device_us);
  }
  if (per_iter * runs <= max_run_us) return;
  std::ostringstream message;
  message << runs << " iterations of up to " << per_iter << " us of work each could take "
          << per_iter * runs << " us, beyond the " << max_run_us
          << " us (about 31 years) a run's clock can count";
  throw std::invalid_argument(message.str());
}

}  // namespace

SyntheticRunResult run_synthetic(const PipelinePlan& plan, const SyntheticRunOptions& options) {
  const PlanGraph graph = validate(plan);
  if (options.iters < 1) throw std::invalid_argument("iters must be at least 1");
  if (options.nvtx && !nvtx_compiled())
    throw std::invalid_argument(
        "NVTX ranges were asked for, but this build of swp has none (they need CUDA's nvtx3 "
        "headers and the nvtx feature)");
  const int slots = options.engine == EngineKind::clock
                        ? graph.depth()
                        : (options.max_depth > 0 ? options.max_depth : graph.depth());

  check_horizon(graph, options.iters);

  Runtime runtime(options.runtime);
  // On sim, lanes are measured too (a task observer costs nothing there; on host it would
  // serialize releases).
  const bool sim = options.runtime.backend == Backend::sim;
  detail::RunMeter meter(graph, options.iters, slots, runtime, sim, options.observer);
  // Made here, before the pipeline, so with the priority the plan gives them.
  const std::vector<std::string>& streams = graph.streams();
  for (std::size_t s = 0; s < streams.size(); ++s)
    runtime.stream(streams[s], graph.priority_of_stream(s)).set_observer(&meter);

  std::unique_ptr<Pipeline<Ctx>> pipe;
  if (options.engine == EngineKind::clock) {
    pipe = std::make_unique<ClockPipeline<Ctx>>(runtime, plan);
  } else {
    pipe = std::make_unique<DataFlowPipeline<Ctx>>(runtime, plan, slots);
  }
  pipe->enable_nvtx(options.nvtx);
  std::int64_t next = 0;
  auto source = [&]() -> std::optional<std::int64_t> {
    if (next >= options.iters) return std::nullopt;
    return next++;
  };
  pipe->on_retire([&](const Ctx& ctx) { meter.retired(ctx.iter_idx, runtime.now()); });
  if (options.observer != nullptr) options.observer->run_starting(runtime, graph);
  if (sim) {
    pipe->set_observer(&meter);  // passes everything on to options.observer
  } else if (options.observer != nullptr) {
    pipe->set_observer(options.observer);
  }
  // The streams belong to the runtime, which outlives the meter: they must not call it once
  // the run is over, whether it succeeded or failed.
  auto detach = [&] {
    for (const auto& s : streams) runtime.stream(s).set_observer(nullptr);
    if (options.observer != nullptr) options.observer->run_finished();
  };
  SyntheticRunResult result;
  try {
    result.stats = pipe->run(source);
  } catch (...) {
    detach();
    throw;
  }
  detach();

  const auto measured = meter.result(result.stats);
  result.slots = slots;
  result.steady_state = measured.steady_state;
  result.us_per_iter = measured.us_per_iter;
  result.bound_us_per_iter = measured.bound_us_per_iter;
  result.efficiency = measured.efficiency;
  return result;
}

ProfileResult profile_synthetic(const PipelinePlan& plan, const SyntheticProfileOptions& options) {
  const PlanGraph graph = validate(plan);
  // A baseline round and one round per task, each of the warm-up and the timed iterations.
  const ProfileOptions& p = options.profile;
  const double per_round = static_cast<double>(p.warmup) +
                           static_cast<double>(p.measure) * static_cast<double>(p.rounds);
  try {
    check_horizon(graph, per_round * static_cast<double>(graph.size() + 1));
  } catch (const std::invalid_argument& e) {
    // Named by the options that make the profile that long.
    throw std::invalid_argument("warmup " + std::to_string(p.warmup) + " + measure " +
                                std::to_string(p.measure) + " x rounds " +
                                std::to_string(p.rounds) + " iterations, for a baseline and " +
                                std::to_string(graph.size()) + " task(s): " + e.what());
  }
  Runtime runtime(options.runtime);
  ClockPipeline<Ctx> pipe(runtime, plan);  // serial runs: the engine plays no role
  return TaskProfiler(pipe).profile(0, options.profile);
}

}  // namespace swp
