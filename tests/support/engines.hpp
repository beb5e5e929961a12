#pragma once
// Helpers to run the same test against both engines.

#include <memory>

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace swp::test {

// `plan`: a swp::Plan<Ctx> (its bodies run) or a PipelinePlan (synthetic costs).
struct UseClock {
  static constexpr const char* name = "clock";
  template <class Ctx, class P>
  static std::unique_ptr<Pipeline<Ctx>> make(Runtime& rt, const P& plan, int = 0) {
    return std::make_unique<ClockPipeline<Ctx>>(rt, plan);
  }
};

struct UseDataFlow {
  static constexpr const char* name = "dataflow";
  template <class Ctx, class P>
  static std::unique_ptr<Pipeline<Ctx>> make(Runtime& rt, const P& plan, int max_depth = 3) {
    return std::make_unique<DataFlowPipeline<Ctx>>(rt, plan, max_depth);
  }
};

}  // namespace swp::test
