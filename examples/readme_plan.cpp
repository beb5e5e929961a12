// The README's first example ("A plan in C++"), verbatim: tests/examples/test_readme_plan.cpp
// checks that the two agree and runs this program.

#include <swp/swp.hpp>

#include <iostream>
#include <vector>

using Batch = std::vector<float>;                  // what the loader yields
struct Fields { float loss = 0; };                 // per-iteration state, reset for each batch
using Ctx = swp::IterContext<Batch, Fields>;       // + ctx.batch, ctx.iter_idx

int main() {
  float weight = 0.5f;                             // the model: Forward reads it, Optim updates it

  swp::Plan<Ctx> plan;
  auto copy = plan.add("H2D", [](Ctx& ctx) { return ctx.batch; },   // its output: a Batch
                       {.stage = 0, .stream = "memcpy", .thread_group = "io"});
  auto fwd = plan.add("Forward", [copy, &weight](Ctx& ctx) -> swp::Co<float> {
    float y = 0;
    for (float x : co_await ctx.get(copy)) y += weight * x;         // H2D's output
    co_return y;
  }, {.stage = 1, .thread_group = "compute"}, swp::reads(copy));    // the read is the dependency
  auto bwd = plan.add("Backward", [copy, fwd](Ctx& ctx) -> swp::Co<float> {
    const float y = co_await ctx.get(fwd);
    ctx.loss = (y - 1) * (y - 1);
    float grad = 0;
    for (float x : co_await ctx.get(copy)) grad += 2 * (y - 1) * x;  // d loss / d weight
    co_return grad;
  }, {.stage = 1, .thread_group = "compute"}, swp::reads(copy, fwd));
  auto optim = plan.add("Optim", [bwd, &weight](Ctx& ctx) -> swp::Co<void> {
    weight -= 0.01f * co_await ctx.get(bwd);
  }, {.stage = 1, .thread_group = "compute"}, swp::reads(bwd));
  plan.inter_iter_deps = {{fwd, optim}};           // Forward(i) waits for Optim(i-1)

  swp::Runtime runtime;                            // host threads; {.backend = swp::Backend::sim}
  swp::DataFlowPipeline<Ctx> pipe(runtime, plan, /*max_depth=*/2);  // or ClockPipeline<Ctx>
  std::cout << pipe.format_schedule(3);            // validated: PlanError names tasks and rule
  pipe.on_retire([](const Ctx& ctx) {              // on this thread, as each iteration retires
    std::cout << "iteration " << ctx.iter_idx << ": loss " << ctx.loss << '\n';
  });
  const std::vector<Batch> loader(5, Batch{1, 2, 3});
  pipe.fill_pipeline(loader);
  while (auto retired = pipe.progress()) { /* retired->iter(), retired->context().loss */ }
}
