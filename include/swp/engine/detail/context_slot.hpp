#pragma once
// ContextSlot: where one iteration in flight keeps its context and its tasks' outputs (not for
// direct use).

#include <memory>
#include <vector>

#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/output_box.hpp"

namespace swp::detail {

/// A context slot of a pipeline: the context object of the iteration that holds it (made and
/// owned by the typed front end, FrontEnd::context) and the output boxes of its tasks. A
/// pipeline has one per entry of its ring of iterations: iteration i uses slot i % (depth + 1),
/// from its admission until its retirement released it (EngineCore::release_slot).
struct ContextSlot {
  void* context = nullptr;
  std::vector<std::unique_ptr<OutputBox>> boxes;  // per task; null where it has no output
  std::vector<TaskIndex> boxed;                   // the tasks that have a box
};

}  // namespace swp::detail
