#include "pp_sim.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "metric.hpp"
#include "swp/sim/pp_simulator.hpp"

namespace swp_bench {

void run_pp_sim(int stages, int microbatches, int rounds) {
  using swp::PpScheduleKind;
  for (auto kind :
       {PpScheduleKind::gpipe, PpScheduleKind::one_f_one_b, PpScheduleKind::interleaved}) {
    const int chunks = kind == PpScheduleKind::interleaved ? 2 : 1;
    const std::string name = "pp_" + std::string(swp::schedule_name(kind));
    std::vector<double> ms;
    swp::PpSimResult result;
    for (int i = 0; i < rounds; ++i) {
      // Timed from the schedule's construction: what `swp pp simulate` pays.
      const auto start = std::chrono::steady_clock::now();
      const auto schedule = swp::make_pp_schedule(kind, stages, microbatches, chunks);
      result = swp::simulate_pp(schedule, {{10}, {20}, 1}, {.keep_timeline = false});
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    const double best = minimum(ms);
    metric(name + "_sim_ms", best, "ms");
    metric(name + "_work_items", static_cast<double>(result.work_items), "count");
    metric(name + "_ns_per_item", best * 1e6 / static_cast<double>(result.work_items), "ns");
    metric(name + "_latency_us", result.latency_us(), "us");
    metric(name + "_bubble_fraction", result.bubble_fraction(), "ratio");
  }
}

}  // namespace swp_bench
