// The 11 TorchRec pipelines of seed 000 as swp presets, measured.
//
// Part 1 binds a user's task bodies to a preset by name and runs it with PresetRunner.
// Part 2 lays the same synthetic recsys step (H2D, input dist, embedding lookup, dense
// forward/backward, optimizer) onto every preset and runs it serially and on both engines,
// on the simulated device (exact, deterministic) and on the host backend (wall time, worker
// threads standing in for device streams), then prints the comparison the runs produced:
// streams, depth, slots in flight, us per iteration, efficiency (steady-state bound over
// measured), speedup over serial. `preset_comparison sim` or `host` runs one backend only
// (another word exits 2, naming it).

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "swp/swp.hpp"

namespace {

using namespace std::chrono_literals;
namespace presets = swp::presets;

struct Fields {
  float loss = 0;
};
using Ctx = swp::IterContext<int, Fields>;

// Part 1: a user's bodies, bound by task name. Each spends a little CPU and device time;
// OptimizerStep reports a loss, read when the iteration retires.
void bound_tasks_demo() {
  auto step = [](std::chrono::microseconds device) {
    return [device](Ctx&, swp::TaskScope& task) -> swp::Co<void> {
      co_await task.cpu_work(5us);
      task.device_work(device);
    };
  };
  presets::TaskBindings<swp::Plan<Ctx>> tasks;  // bodies for contexts Ctx, by task name
  tasks.bind("H2D", step(300us))
      .bind("InputDistStart", step(300us))
      .bind("InputDistWait", step(300us))
      .bind("ZeroGrad", step(20us))
      .bind("WaitBatch", step(0us))
      .bind("Forward", step(900us))
      .bind("Backward", step(1100us))
      .bind("OptimizerStep", [](Ctx& ctx) {
        ctx.loss = 1.0f / static_cast<float>(ctx.batch + 1);
      });
  const auto preset = presets::make_preset("sparse_dist", tasks);

  swp::Runtime runtime({.backend = swp::Backend::sim});
  float loss = 0;
  presets::PresetRunner runner(preset, [&](const swp::Plan<Ctx>& plan) {
    auto pipe = std::make_unique<swp::ClockPipeline<Ctx>>(runtime, plan);
    pipe->on_retire([&](const Ctx& ctx) { loss = ctx.loss; });
    return pipe;
  });
  int next = 0;
  const auto start = runtime.now();
  const auto n = runner.run([&]() -> std::optional<int> {
    if (next == 100) return std::nullopt;
    return next++;
  });
  const double us = std::chrono::duration<double, std::micro>(runtime.now() - start).count();
  std::printf("sparse_dist with bound tasks: %lld iterations, %.1f us/iter (sim), last loss %.4f\n\n",
              static_cast<long long>(n), us / static_cast<double>(n), static_cast<double>(loss));

  // A binding that does not fit the preset is refused, naming the task.
  presets::TaskBindings<swp::Plan<Ctx>> short_one;
  short_one.bind("H2D", step(1us));
  try {
    (void)presets::make_preset("base", short_one);
  } catch (const presets::BindingError& e) {
    std::printf("an incomplete binding is refused:\n  %s\n\n", e.what());
  }
}

// Part 2.
struct Row {
  std::string label;
  std::size_t streams = 0;
  int depth = 0;
  double serial = 0;
  swp::SyntheticRunResult clock, dataflow;
};

using SerialCtx = swp::IterContext<std::int64_t>;

// Serial baseline: every task in topological order, all device work on the default stream.
double serial_us_per_iter(const swp::PipelinePlan& plan, swp::Backend backend, int iters) {
  swp::Runtime runtime({.backend = backend});
  swp::ClockPipeline<SerialCtx> pipe(runtime, plan);
  std::vector<std::int64_t> batches(static_cast<std::size_t>(iters));
  return pipe.run_serial(batches).us_per_iter();
}

Row measure(const std::string& label, const swp::PipelinePlan& plan, swp::Backend backend,
            int iters) {
  const auto graph = swp::validate(plan);
  Row row;
  row.label = label;
  std::set<std::string> streams;
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) streams.insert(graph.stream(t));
  row.streams = streams.size();
  row.depth = graph.depth();
  row.serial = serial_us_per_iter(plan, backend, iters);
  swp::SyntheticRunOptions options{.iters = iters, .runtime = {.backend = backend}};
  options.engine = swp::EngineKind::clock;
  row.clock = swp::run_synthetic(plan, options);
  options.engine = swp::EngineKind::data_flow;  // max_depth 0: the plan's depth
  row.dataflow = swp::run_synthetic(plan, options);
  return row;
}

void print_rows(const char* backend, const std::vector<Row>& rows) {
  std::printf("%s backend (us per iteration, steady state; speedup over serial)\n", backend);
  std::printf("%-30s %7s %5s %5s %8s | %8s %5s %7s | %8s %5s %7s\n", "preset", "streams",
              "depth", "slots", "serial", "clock", "eff", "speedup", "dataflow", "eff", "speedup");
  for (const auto& r : rows) {
    std::printf("%-30s %7zu %5d %5d %8.1f | %8.1f %5.2f %6.2fx | %8.1f %5.2f %6.2fx\n",
                r.label.c_str(), r.streams, r.depth, r.depth, r.serial, r.clock.us_per_iter,
                r.clock.efficiency, r.serial / r.clock.us_per_iter, r.dataflow.us_per_iter,
                r.dataflow.efficiency, r.serial / r.dataflow.us_per_iter);
  }
  std::printf("\n");
}

void compare(swp::Backend backend, int iters) {
  std::vector<Row> rows;
  for (const auto& info : presets::preset_catalogue()) {
    const std::string name(info.name);
    auto plan = presets::make_preset(name).plan();
    presets::apply_recsys_costs(plan);
    rows.push_back(measure(name, plan, backend, iters));
    if (name == "fused_sparse_dist") {  // the seed's drawn variant: a stream of its own
      auto fused = presets::make_preset(
          name, {.emb_lookup_stream = presets::EmbLookupStream::new_stream}).plan();
      presets::apply_recsys_costs(fused);
      rows.push_back(measure(name + " (new stream)", fused, backend, iters));
    }
  }
  print_rows(std::string(swp::backend_name(backend)).c_str(), rows);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The 11 TorchRec pipelines as swp presets, measured on the sim and host backends.",
               "preset_comparison"};
  std::string backend;
  app.add_option("backend", backend, "run on this backend only (sim or host); default: both")
      ->check(CLI::IsMember({"sim", "host"}));
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  const bool sim = backend.empty() || backend == "sim";
  const bool host = backend.empty() || backend == "host";
  bound_tasks_demo();
  const presets::RecsysStep step;
  std::printf("synthetic recsys step (device us): h2d %.0f, input dist %.0f, emb lookup %.0f, "
              "dense fwd %.0f, dense bwd %.0f, emb bwd %.0f, optimizer %.0f; %.0f us CPU a task\n\n",
              step.h2d_us, step.input_dist_us, step.emb_lookup_us, step.dense_fwd_us,
              step.dense_bwd_us, step.emb_bwd_us, step.optimizer_us, step.cpu_us);
  if (sim) compare(swp::Backend::sim, 200);
  if (host) compare(swp::Backend::host, 60);
}
