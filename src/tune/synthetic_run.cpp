#include "swp/tune/synthetic_run.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

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

// Iteration completion times: the latest device end of each iteration, and its retirement.
// A stream has one observer: device work is passed on to the run's observer, if any.
class Completion final : public DeviceObserver {
 public:
  Completion(std::int64_t iterations, DeviceObserver* next)
      : device_end_(static_cast<std::size_t>(iterations)),
        retired_(static_cast<std::size_t>(iterations)),
        next_(next) {}

  void device_work(const Stream& s, const DeviceWork& w) noexcept override {
    if (next_ != nullptr) next_->device_work(s, w);
    const auto iter = static_cast<std::size_t>(w.tag >> 16);
    std::lock_guard lock(mutex_);
    if (iter < device_end_.size()) device_end_[iter] = std::max(device_end_[iter], w.end);
  }
  // Called on the caller's thread only.
  void retired(std::int64_t iter, Clock::time_point at) {
    retired_[static_cast<std::size_t>(iter)] = at;
  }
  Clock::time_point completion(std::int64_t iter) const {
    std::lock_guard lock(mutex_);
    const auto i = static_cast<std::size_t>(iter);
    return std::max(retired_[i], device_end_[i]);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Clock::time_point> device_end_, retired_;
  DeviceObserver* next_;
};

}  // namespace

SyntheticRunResult run_synthetic(const PipelinePlan& plan, const SyntheticRunOptions& options) {
  const PlanGraph graph = validate(plan);
  if (options.iters < 1) throw std::invalid_argument("iters must be at least 1");
  const int slots = options.engine == EngineKind::clock
                        ? graph.depth()
                        : (options.max_depth > 0 ? options.max_depth : graph.depth());

  Runtime runtime(options.runtime);
  Completion completion(options.iters, options.observer);
  std::set<std::string> streams;
  for (TaskIndex t = 0; t < graph.size(); ++t) streams.insert(graph.stream(t));
  for (const auto& s : streams) runtime.stream(s).set_observer(&completion);

  std::unique_ptr<Pipeline<Ctx>> pipe;
  if (options.engine == EngineKind::clock) {
    pipe = std::make_unique<ClockPipeline<Ctx>>(runtime, plan);
  } else {
    pipe = std::make_unique<DataFlowPipeline<Ctx>>(runtime, plan, slots);
  }
  std::int64_t next = 0;
  auto source = [&]() -> std::optional<std::int64_t> {
    if (next >= options.iters) return std::nullopt;
    return next++;
  };
  pipe->on_retire([&](const Ctx& ctx) { completion.retired(ctx.iter_idx, runtime.now()); });
  if (options.observer != nullptr) {
    options.observer->run_starting(runtime, graph);
    pipe->set_observer(options.observer);
  }
  SyntheticRunResult result;
  try {
    result.stats = pipe->run(source);
  } catch (...) {
    if (options.observer != nullptr) options.observer->run_finished();
    throw;
  }
  for (const auto& s : streams) runtime.stream(s).set_observer(nullptr);
  if (options.observer != nullptr) options.observer->run_finished();

  // Steady state: skip the fill (the first `slots` iterations) and the drain (the last ones).
  const std::int64_t n = options.iters;
  std::int64_t first = std::min<std::int64_t>(slots, n / 4);
  std::int64_t last = n - 1 - std::min<std::int64_t>(slots, n / 4);
  if (last <= first) {
    first = 0;
    last = n - 1;
  }
  if (last > first) {
    const auto span = completion.completion(last) - completion.completion(first);
    result.us_per_iter = std::chrono::duration<double, std::micro>(span).count() /
                         static_cast<double>(last - first);
  } else {
    result.us_per_iter = result.stats.us_per_iter();
  }
  result.bound_us_per_iter = bound_us_per_iter(graph);
  result.efficiency = result.us_per_iter > 0 ? result.bound_us_per_iter / result.us_per_iter : 0;
  return result;
}

ProfileResult profile_synthetic(const PipelinePlan& plan, const SyntheticProfileOptions& options) {
  Runtime runtime(options.runtime);
  ClockPipeline<Ctx> pipe(runtime, plan);  // serial runs: the engine plays no role
  return TaskProfiler(pipe).profile(0, options.profile);
}

}  // namespace swp
