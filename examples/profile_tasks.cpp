// Profiling example: which task of a training step is worth overlapping?
//
// A small step (load, embedding lookup, forward, backward, optimizer) with typed outputs and
// declared writes. The example shortcuts the embedding lookup to show what replay keeps
// (the declared fields and the output feed the consumers; the body does not run), then lets
// TaskProfiler measure every task's exposed time on the sim backend, where the numbers are
// exact, and prints the seed's report.

#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "swp/swp.hpp"

namespace {

using namespace std::chrono_literals;

struct Fields {
  std::vector<float> embeddings;  // written by EmbLookup (declared)
  float loss = 0;                 // written by Forward (declared)
};
using Ctx = swp::IterContext<int, Fields>;

struct Step {
  int lookups = 0;                       // EmbLookup body executions
  std::map<std::string, int> cache_hits; // state outside the context, declared as DeclaredIO
};

swp::Plan<Ctx> training_step(Step& step) {
  swp::Plan<Ctx> plan;
  auto load = plan.add("Load", [](Ctx& ctx, swp::TaskScope& task) -> swp::Co<int> {
    co_await task.cpu_work(40us);
    task.device_work(150us);  // the H2D copy
    co_return ctx.batch;
  }, {.stage = 0, .stream = "memcpy"});
  auto emb = plan.add("EmbLookup", [&step, load](Ctx& ctx, swp::TaskScope& task) -> swp::Co<void> {
    const int ids = co_await ctx.get(load);
    ++step.lookups;
    ++step.cache_hits["rows"];
    co_await task.cpu_work(30us);
    task.device_work(400us);
    ctx.embeddings.assign(4, static_cast<float>(ids));
  }, {.stage = 1, .stream = "emb"}, swp::reads(load));
  plan.declare_writes(emb, swp::writes(&Fields::embeddings));
  plan.declare_io(emb, swp::declared_io<std::map<std::string, int>>(
                           [&step] { return step.cache_hits; },
                           [&step](const std::map<std::string, int>& saved) { step.cache_hits = saved; }));
  auto fwd = plan.add("Forward", [](Ctx& ctx, swp::TaskScope& task) -> swp::Co<void> {
    co_await task.cpu_work(50us);
    task.device_work(600us);
    ctx.loss = 0;
    for (float e : ctx.embeddings) ctx.loss += e;
  }, {.stage = 2}, swp::reads(emb));  // the embeddings EmbLookup wrote
  plan.declare_writes(fwd, swp::writes(&Fields::loss));
  auto bwd = plan.add("Backward", [](Ctx&, swp::TaskScope& task) -> swp::Co<void> {
    co_await task.cpu_work(60us);
    task.device_work(900us);
  }, {.stage = 2}, swp::reads(fwd));
  auto opt = plan.add("Optimizer", [](Ctx&, swp::TaskScope& task) -> swp::Co<void> {
    co_await task.cpu_work(20us);
    task.device_work(200us);
  }, {.stage = 2}, swp::reads(bwd));
  plan.inter_iter_deps = {{fwd, opt}};
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A training step's shortcut replay, then TaskProfiler's per-task exposed "
               "time on the sim backend. Takes no flags.",
               "profile_tasks"};
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  Step step;
  swp::Runtime runtime({.backend = swp::Backend::sim});
  swp::ClockPipeline<Ctx> pipe(runtime, training_step(step));

  // Shortcut: EmbLookup runs once (caching), then replays its embeddings and cache state.
  std::vector<float> losses;
  pipe.on_retire([&](const Ctx& ctx) { losses.push_back(ctx.loss); });
  pipe.enable_shortcut("EmbLookup");
  std::cout << pipe.format_schedule(4) << '\n';
  const auto stats = pipe.run(std::vector<int>{1, 2, 3, 4, 5, 6});
  std::cout << "shortcut run: " << stats.iterations << " iterations, EmbLookup ran "
            << step.lookups << " time(s); losses:";
  for (float loss : losses) std::cout << ' ' << loss;  // all 4: batch 1's embeddings replayed
  std::cout << "\n\n";
  pipe.disable_shortcut();

  // Profile every task on serial iterations of one representative batch.
  swp::TaskProfiler profiler(pipe);
  const auto result = profiler.profile(7, {.warmup = 2, .measure = 10, .rounds = 3});
  result.print_report();
  const auto serial = pipe.run_serial(std::vector<int>(20, 7));
  const auto pipelined = pipe.run(std::vector<int>(20, 7));
  std::cout << "\nserial " << serial.us_per_iter() << " us/iter, pipelined "
            << pipelined.us_per_iter() << " us/iter\n";
  return 0;
}
