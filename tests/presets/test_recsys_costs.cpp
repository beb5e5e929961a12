#include "swp/presets/recsys_costs.hpp"

#include <doctest/doctest.h>

#include <string>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace test_recsys_costs {  // each test file's names apart (unity builds)

namespace presets = swp::presets;

TEST_SUITE_BEGIN("presets");

namespace {

double device_us(const swp::PipelinePlan& plan, const std::string& task) {
  for (const auto& t : plan.tasks)
    if (t.task.name == task) return t.cost.device_us;
  FAIL("no task ", task);
  return 0;
}

swp::PipelinePlan costed(const std::string& name, presets::PresetOptions options = {},
                         const presets::RecsysStep& step = {}) {
  auto plan = presets::make_preset(name, options).plan();
  presets::apply_recsys_costs(plan, step);
  return plan;
}

// Steady-state us per iteration on the simulated device (deterministic).
double sim_us(const swp::PipelinePlan& plan, swp::EngineKind engine) {
  swp::SyntheticRunOptions options{.engine = engine, .iters = 120,
                                   .runtime = {.backend = swp::Backend::sim}};
  return swp::run_synthetic(plan, options).us_per_iter;
}

double serial_us(const swp::PipelinePlan& plan) {
  swp::Runtime runtime({.backend = swp::Backend::sim});
  swp::ClockPipeline<swp::IterContext<int>> pipe(runtime, plan);
  return pipe.run_serial(std::vector<int>(60)).us_per_iter();
}

}  // namespace

TEST_CASE("work a preset has no task for is folded into the task that does it there") {
  const presets::RecsysStep s;
  CHECK(device_us(costed("base"), "Forward") == s.dense_fwd_us + s.emb_lookup_us + s.input_dist_us);
  CHECK(device_us(costed("sparse_dist"), "Forward") == s.dense_fwd_us + s.emb_lookup_us);
  CHECK(device_us(costed("sparse_dist"), "InputDistStart") == s.input_dist_us / 2);
  CHECK(device_us(costed("fused_sparse_dist"), "Forward") == s.dense_fwd_us);
  CHECK(device_us(costed("fused_sparse_dist"), "Backward") == s.dense_bwd_us + s.emb_bwd_us);
  CHECK(device_us(costed("semi_sync"), "Backward") == s.dense_bwd_us);
  CHECK(device_us(costed("semi_sync"), "EmbBackward") == s.emb_bwd_us);
  CHECK(device_us(costed("staged"), "data_copy") == s.h2d_us);
  CHECK(device_us(costed("pt2"), "LoadBatch") == 0);
  // Every training preset does the same work in total.
  auto total = [](const swp::PipelinePlan& plan) {
    double sum = 0;
    for (const auto& t : plan.tasks) sum += t.cost.device_us;
    return sum;
  };
  for (const char* name : {"base", "pt2", "sparse_dist", "sparse_dist_lite", "fused_sparse_dist",
                           "semi_sync", "sparse_dist_comp_autograd"}) {
    CAPTURE(name);
    CHECK(total(costed(name)) == doctest::Approx(total(costed("base"))));
  }
}

TEST_CASE_TEMPLATE_DEFINE("the measured comparison orders the presets as seed 000 says", E, order) {
  const swp::EngineKind engine = E::value;
  CAPTURE(swp::engine_name(engine));
  const double base = sim_us(costed("base"), engine);
  const double sparse = sim_us(costed("sparse_dist"), engine);
  const double lite = sim_us(costed("sparse_dist_lite"), engine);

  // With a slow input dist, taking it off the critical path pays; Lite keeps it there.
  CHECK(sparse < 0.9 * base);
  CHECK(sparse < 0.9 * lite);
  // Lite needs two slots where SparseDist needs three.
  swp::Runtime runtime({.backend = swp::Backend::sim});
  CHECK(swp::ClockPipeline<swp::IterContext<int>>(runtime, costed("sparse_dist_lite")).depth() == 2);
  CHECK(swp::ClockPipeline<swp::IterContext<int>>(runtime, costed("sparse_dist")).depth() == 3);

  // Fused overlaps the lookup with the previous optimizer; `current` (emb_lookup aliased to the
  // default stream) degrades to SparseDist.
  using presets::EmbLookupStream;
  const double fused = sim_us(costed("fused_sparse_dist"), engine);
  CHECK(fused < sparse);
  const double fused_new =
      sim_us(costed("fused_sparse_dist", {.emb_lookup_stream = EmbLookupStream::new_stream}), engine);
  CHECK(fused_new < sparse);
  CHECK(sim_us(costed("fused_sparse_dist", {.emb_lookup_stream = EmbLookupStream::current}),
               engine) == doctest::Approx(sparse));
  // `data_dist` (the default) really shares the input-dist stream: while that stream has room
  // it measures like `new`; once input dist is slow, lookup and input dist queue one after the
  // other on it and bound the step, where `new` still runs them side by side.
  CHECK(fused == doctest::Approx(fused_new));
  const presets::RecsysStep slow_dist{.input_dist_us = 2000};
  const double shared = sim_us(costed("fused_sparse_dist", {}, slow_dist), engine);
  CHECK(shared == doctest::Approx(slow_dist.input_dist_us + slow_dist.emb_lookup_us));
  CHECK(sim_us(costed("fused_sparse_dist", {.emb_lookup_stream = EmbLookupStream::new_stream},
                      slow_dist), engine) < 0.9 * shared);
  // Prefetch hides its extra work: more serial time, the same pipelined time.
  const auto prefetch = costed("prefetch_sparse_dist");
  CHECK(serial_us(prefetch) > serial_us(costed("sparse_dist")));
  CHECK(sim_us(prefetch, engine) == doctest::Approx(sparse));
  // CompAutograd schedules like SparseDist; PT2 does not overlap at all.
  CHECK(sim_us(costed("sparse_dist_comp_autograd"), engine) == doctest::Approx(sparse));
  const auto pt2 = costed("pt2");
  CHECK(sim_us(pt2, engine) >= 0.99 * serial_us(pt2));
  // Eval drops backward and optimizer.
  CHECK(sim_us(costed("eval_sparse_dist"), engine) < 0.5 * sparse);
  // Every pipelined preset beats its serial run except PT2.
  for (const auto& info : presets::preset_catalogue()) {
    if (info.name == "pt2") continue;
    CAPTURE(info.name);
    const auto plan = costed(std::string(info.name));
    CHECK(sim_us(plan, engine) < serial_us(plan));
  }
}

namespace {
template <swp::EngineKind K>
struct Kind {
  static constexpr swp::EngineKind value = K;
};
}  // namespace

TEST_CASE_TEMPLATE_INVOKE(order, Kind<swp::EngineKind::clock>, Kind<swp::EngineKind::data_flow>);

TEST_SUITE_END();

}  // namespace test_recsys_costs
