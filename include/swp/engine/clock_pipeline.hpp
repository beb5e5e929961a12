#pragma once
// ClockPipeline: the clock-driven engine — the same core behind a period gate (seed
// SWPipeline).

#include <algorithm>

#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/pipeline.hpp"

namespace swp {

/// Clock-driven engine. `progress()` is the clock: it retires the oldest iteration and opens
/// the next period p, which releases (task, p − stage) for every task, submitted to the lanes
/// in the ready-first order of the plan. Depth = max(stage) + 1 iterations are in flight, so
/// memory is fully deterministic, and deadlock freedom follows statically from validation plus
/// the ready-first order (seed: corollaries 1 and 3, completeness proof).
///
/// Example:
/// ```
/// swp::Runtime rt;
/// swp::ClockPipeline<Ctx> pipe(rt, plan);
/// auto stats = pipe.run(batches);
/// ```
template <detail::PipelineContext Ctx>
class ClockPipeline final : public Pipeline<Ctx> {
 public:
  /// A pipeline running `plan`'s bodies. Throws PlanError for an invalid plan,
  /// std::invalid_argument for bodies that no longer fit the plan's tasks
  /// (see Plan::bound_bodies), std::length_error for a plan of 2^31 tasks or more.
  ClockPipeline(Runtime& runtime, const Plan<Ctx>& plan)
      : Pipeline<Ctx>(runtime, plan, &detail::make_clock_release, depth_of(plan.untyped())) {}

  /// A pipeline running `plan`'s synthetic costs (a plain plan has no bodies).
  ClockPipeline(Runtime& runtime, const PipelinePlan& plan)
      : Pipeline<Ctx>(runtime, plan, &detail::make_clock_release, depth_of(plan)) {}

  /// A plan whose bodies were bound for another context type does not make a pipeline.
  template <class Other>
  ClockPipeline(Runtime&, const Plan<Other>&) = delete;

  /// Drains a filled pipeline and waits for running bodies first (see Pipeline).
  ~ClockPipeline() override { this->shut_down(); }

 private:
  // max(stage) + 1; the base validates the plan (a negative stage is reported there).
  static std::size_t depth_of(const PipelinePlan& plan) {
    int max_stage = 0;
    for (const auto& t : plan.tasks) max_stage = std::max(max_stage, t.schedule.stage);
    return static_cast<std::size_t>(max_stage) + 1;
  }
};

}  // namespace swp
