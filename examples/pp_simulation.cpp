// A pipeline-parallel deployment, estimated and simulated (docs/sim.md): the seed 002 model of a
// 64-layer model on 4 stages, then the same stages' training schedules event by event.

#include <cstdio>
#include <vector>

#include "common/cli.hpp"
#include "swp/sim.hpp"

int main(int argc, char** argv) {
  CLI::App app{"A pipeline-parallel deployment estimated and simulated (docs/sim.md). Takes "
               "no flags.",
               "pp_simulation"};
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  // The fill-drain estimate: 250 us per layer, 4096 tokens of 5120 x bf16 per message.
  const auto plan = swp::StagePlan::uniform(64, 4);
  const auto bytes = swp::hidden_states_message_bytes(4096, 5120, 2);
  const swp::LinkModel link{.latency_us = 10, .bandwidth_gbps = 50};
  std::vector<double> compute;
  for (const auto& s : plan.stages()) compute.push_back(s.layer_count() * 250.0);
  const auto est = swp::estimate_pipeline(compute, swp::stage_comm_us(4, bytes, link), 8);
  std::printf("fill-drain latency %.3f us\n%s\n", est.latency_us,
              swp::format_pp_breakdown(est).c_str());

  // What each stage holds: 800 MiB of weights and 4 KiB of KV cache per token per layer,
  // 1 GiB embedding and LM head; the peak over the stages for 32768 cached tokens.
  const auto model =
      swp::ModelMemory::uniform(64, 800LL << 20, 4LL << 10, 1LL << 30, 20LL << 10, 1LL << 30);
  const auto peak = swp::stage_memory_peak(plan, model, 32768);
  std::printf("max stage weights %.2f GiB, max stage KV cache %.2f GiB\n",
              static_cast<double>(peak.max_stage_weight_bytes) / (1LL << 30),
              static_cast<double>(peak.max_stage_kv_cache_bytes) / (1LL << 30));

  // Where 4-stage pipelines fit on 8 devices.
  const auto candidates =
      swp::search_candidates(8, swp::resolve_search_sizes(std::vector<int>{}, 8, 1, "--tp-sizes"),
                             swp::resolve_search_sizes(std::vector<int>{}, 8, 1, "--pp-sizes"));
  for (const auto& c : candidates)
    if (c.pp == 4) std::printf("tp=%d pp=%d dp=%d\n", c.tp, c.pp, c.dp);

  // The training schedules of 4 stages, 8 microbatches, f 10 us, b 20 us, 2 us per transfer.
  for (auto kind : {swp::PpScheduleKind::gpipe, swp::PpScheduleKind::one_f_one_b,
                    swp::PpScheduleKind::interleaved}) {
    const int chunks = kind == swp::PpScheduleKind::interleaved ? 2 : 1;
    const auto run = swp::simulate_pp(swp::make_pp_schedule(kind, 4, 8, chunks),
                                      {.fwd_us = {10}, .bwd_us = {20}, .comm_us = 2});
    std::printf("%-11s latency %.0f us, bubble %.3f\n", swp::schedule_name(kind).data(),
                run.latency_us(), run.bubble_fraction());
  }
}
