#include "swp/sim/pp_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "number_text.hpp"

namespace swp {

namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

void check_times(const char* what, const std::vector<double>& v) {
  for (std::size_t s = 0; s < v.size(); ++s)
    if (!std::isfinite(v[s]) || v[s] < 0)
      throw std::invalid_argument(std::string(what) + " time of stage " + std::to_string(s) + " (" +
                                  detail::number_text(v[s]) + " us) must be finite and >= 0");
}

}  // namespace

double PipelineEstimate::compute_us() const noexcept { return sum(stage_compute_us); }
double PipelineEstimate::comm_us() const noexcept { return sum(stage_comm_us); }
double PipelineEstimate::bubble_us() const noexcept {
  // The seed's formula is for pp_size > 1 (pp_size 1 keeps its old output): one stage runs
  // its microbatches back to back and never idles, so the (m - 1) later passes are no bubble.
  if (stage_us.size() <= 1) return 0;
  return std::max(0.0, latency_us - sum(stage_us));
}

PipelineEstimate estimate_pipeline(const std::vector<double>& stage_compute_us,
                                   const std::vector<double>& stage_comm_us, int microbatches) {
  if (stage_compute_us.empty()) throw std::invalid_argument("no stages to estimate");
  if (stage_comm_us.size() != stage_compute_us.size())
    throw std::invalid_argument("stage comm times (" + std::to_string(stage_comm_us.size()) +
                                ") and compute times (" + std::to_string(stage_compute_us.size()) +
                                ") differ in count");
  if (microbatches < 1)
    throw std::invalid_argument("microbatch count " + std::to_string(microbatches) +
                                " must be at least 1");
  check_times("compute", stage_compute_us);
  check_times("comm", stage_comm_us);
  PipelineEstimate e;
  e.stage_compute_us = stage_compute_us;
  e.stage_comm_us = stage_comm_us;
  e.stage_us.resize(stage_compute_us.size());
  for (std::size_t s = 0; s < stage_compute_us.size(); ++s)
    e.stage_us[s] = stage_compute_us[s] + stage_comm_us[s];
  const double slowest = *std::max_element(e.stage_us.begin(), e.stage_us.end());
  e.latency_us = sum(e.stage_us) + (microbatches - 1) * slowest;
  return e;
}

std::string format_pp_breakdown(const PipelineEstimate& estimate) {
  const double compute = estimate.compute_us();
  const double comm = estimate.comm_us();
  const double bubble = estimate.bubble_us();
  const double total = compute + comm + bubble;
  const auto pct = [total](double x) { return total > 0 ? 100.0 * x / total : 0.0; };
  char line[128];
  std::snprintf(line, sizeof line, "PP Compute %.2f | PP Comm %.2f | PP Bubble %.2f", pct(compute),
                pct(comm), pct(bubble));
  return line;
}

}  // namespace swp
