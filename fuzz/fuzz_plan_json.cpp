// libFuzzer target: the plan JSON loader, and what the commands do with what it loads.
//
// Input: plan JSON. Properties checked (a violation traps, so the fuzzer reports it):
// - parse_plan either returns a plan or throws PlanFormatError, nothing else;
// - plan_to_json of a parsed plan parses again, to the same JSON (the round trip is stable);
// - inspect never throws; a plan that is not structurally broken can be ordered, analyzed and
//   printed as a schedule;
// - a valid plan small enough to run quickly (<= 64 tasks, depth <= 64, <= 1 s of costs per
//   iteration, far below the engines' deadlines) runs on sim on both engines without error,
//   with an efficiency of at most 1, and its trace can be written.
// Under ASan + UBSan: no memory error, no undefined behaviour, no leak.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "swp/core/enqueue_order.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/core/schedule_table.hpp"
#include "swp/core/stage_analysis.hpp"
#include "swp/trace/chrome_trace.hpp"
#include "swp/trace/svg_timeline.hpp"
#include "swp/trace/trace_recorder.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace {

void check(bool property) {
  if (!property) __builtin_trap();
}

bool small_enough_to_run(const swp::PlanGraph& graph) {
  double us = 0;
  for (swp::TaskIndex t = 0; t < graph.size(); ++t) {
    const auto& c = graph.cost(t);
    us += c.cpu_us + std::max(c.device_us, c.jitter_device_us);
  }
  return graph.size() <= 64 && graph.depth() <= 64 && us <= 1e6;
}

void run_on_sim(const swp::PipelinePlan& plan, swp::EngineKind engine) {
  swp::TraceRecorder recorder;
  swp::SyntheticRunOptions options{
      .engine = engine, .iters = 12, .runtime = {.backend = swp::Backend::sim}};
  options.observer = &recorder;
  const auto result = swp::run_synthetic(plan, options);  // throws: a valid plan failed
  check(result.stats.iterations == 12);
  check(result.efficiency <= 1 && result.us_per_iter >= 0);
  std::ostringstream json, svg;
  swp::write_chrome_trace(recorder.trace(), json);
  swp::write_svg(recorder.trace(), svg);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  swp::ParsedPlan parsed;
  try {
    parsed = swp::parse_plan(text, "fuzz.json");
  } catch (const swp::PlanFormatError&) {
    return 0;
  }
  const std::string json = swp::plan_to_json(parsed.plan);
  check(swp::plan_to_json(swp::parse_plan(json, "round-trip").plan) == json);

  const auto inspection = swp::inspect(parsed.plan);
  if (inspection.structurally_broken()) return 0;
  const auto& graph = inspection.graph;
  for (const auto policy : {swp::OrderPolicy::ready_first, swp::OrderPolicy::stage_descending}) {
    check(swp::enqueue_order(graph, policy).size() == graph.size());
    (void)swp::format_stage_analysis(graph, swp::analyze_stages(graph, policy));
  }
  (void)swp::format_schedule(graph, 3);
  if (!inspection.valid() || !small_enough_to_run(graph)) return 0;
  try {
    run_on_sim(parsed.plan, swp::EngineKind::clock);
    run_on_sim(parsed.plan, swp::EngineKind::data_flow);
  } catch (...) {
    check(false);
  }
  return 0;
}
