#pragma once
// The fill-drain estimate of a pipeline-parallel run and its PP Compute / PP Comm / PP Bubble
// breakdown (seed 002, sections 2.7.4 and 2.8).

#include <string>
#include <vector>

namespace swp {

/// The seed's PipelineRuntimeEstimate, in microseconds.
struct PipelineEstimate {
  double latency_us = 0;
  std::vector<double> stage_compute_us;
  std::vector<double> stage_comm_us;  ///< incoming + outgoing
  std::vector<double> stage_us;       ///< compute + comm

  /// Σ stage compute.
  [[nodiscard]] double compute_us() const noexcept;
  /// Σ stage comm.
  [[nodiscard]] double comm_us() const noexcept;
  /// max(0, latency − Σ stage times): the time the fill-drain formula adds for the later
  /// microbatches; 0 for one microbatch, and for one stage (no pipeline: its microbatches run
  /// back to back, none waits for another stage).
  [[nodiscard]] double bubble_us() const noexcept;
};

/// The fill-drain approximation: stage_time[i] = compute[i] + comm[i],
/// latency = Σ stage_time + (m − 1) · max(stage_time): the first microbatch passes every stage,
/// the later ones follow at the pace of the slowest stage.
///
/// Throws std::invalid_argument when the vectors are empty or differ in length, a time is
/// negative or not finite (naming the stage), or `microbatches` < 1.
///
/// Example: `estimate_pipeline({1.5, 1.5}, {0.5, 0.5}, 2).latency_us == 6`.
PipelineEstimate estimate_pipeline(const std::vector<double>& stage_compute_us,
                                   const std::vector<double>& stage_comm_us, int microbatches);

/// The breakdown as percentages of compute + comm + bubble, two decimals:
/// "PP Compute 50.00 | PP Comm 16.67 | PP Bubble 33.33" (the seed's serving summary).
/// All zeros when the estimate is empty of time.
std::string format_pp_breakdown(const PipelineEstimate& estimate);

}  // namespace swp
