#pragma once
// PipelineTask: one schedulable unit of computation (seed 003, class PipelineTask).

#include <string>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"

namespace swp {

/// What a task is to the plan model: its globally unique name and its declared side effects
/// outside the iteration context (DeclaredIO). How it is scheduled lives in the plan
/// (TaskSchedule); its body is bound by the engine (swp::Plan<Ctx>), typed, never here, so a
/// plan stays plain data that can be validated, ordered, printed, serialized and run on
/// synthetic costs.
///
/// Example: `plan.add(swp::PipelineTask{"ZeroGrad"}, {.stage = 1});`
struct PipelineTask {
  std::string name;
  std::vector<DeclaredIO> io;

  PipelineTask() = default;
  PipelineTask(std::string task_name) : name(std::move(task_name)) {}  // NOLINT: implicit
  PipelineTask(const char* task_name) : name(task_name) {}            // NOLINT: implicit
  PipelineTask(std::string task_name, std::vector<DeclaredIO> declared)
      : name(std::move(task_name)), io(std::move(declared)) {}
};

}  // namespace swp
