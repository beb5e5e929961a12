#pragma once
// PipelineTask: one schedulable unit of computation (seed 003, class PipelineTask).

#include <any>
#include <string>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"

namespace swp {

/// What a task is: its globally unique name, its body and its declared side effects.
/// How it is scheduled lives in the plan (TaskSchedule), never here.
///
/// `fn` holds the body type-erased; the engine that runs the plan casts it to the callable type
/// it expects and reports a mismatch naming the task. A task without a body (`fn` empty) can be
/// validated, ordered and printed, and run with synthetic costs.
///
/// Example: `swp::PipelineTask{"Forward", forward_fn}`.
struct PipelineTask {
  std::string name;
  std::any fn;
  std::vector<DeclaredIO> io;

  PipelineTask() = default;
  PipelineTask(std::string task_name) : name(std::move(task_name)) {}  // NOLINT: implicit
  PipelineTask(const char* task_name) : name(task_name) {}            // NOLINT: implicit
  template <class Fn>
  PipelineTask(std::string task_name, Fn body, std::vector<DeclaredIO> declared = {})
      : name(std::move(task_name)), fn(std::move(body)), io(std::move(declared)) {}
};

}  // namespace swp
