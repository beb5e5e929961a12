#pragma once
// TaskBindings: the user's task bodies, by task name, for a preset's plan.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/pipeline_task.hpp"

namespace swp::presets {

/// A binding that does not fit a preset: a task left without a body, a body for a task the
/// preset does not have, or a name bound twice. `what()` names the preset and the task(s).
class BindingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The user's callables by task name. Each entry is a whole PipelineTask (its `fn` and its
/// DeclaredIO), so the bodies are made where the context type is known — by the engine's
/// `swp::task<Ctx>(...)` — and this layer only moves them into the plan, keeping `presets`
/// dependent on `core` alone.
///
/// Example:
/// ```
/// swp::presets::TaskBindings tasks;
/// tasks.bind(swp::task<Ctx>("H2D", copy_batch))
///      .bind(swp::task<Ctx>("Forward", forward));
/// auto preset = swp::presets::make_preset("base", tasks);   // throws BindingError if short
/// ```
class TaskBindings {
 public:
  /// Adds `task` under its name. Throws BindingError when the name is empty or bound already.
  TaskBindings& bind(PipelineTask task);

  [[nodiscard]] bool contains(const std::string& name) const { return tasks_.count(name) != 0; }
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }
  /// The bound names, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

  /// Gives every task of `plan` its bound body and DeclaredIO, keeping its schedule and cost.
  /// Throws BindingError naming `preset` and every task left unbound, or every bound name that
  /// is not a task of `plan`.
  void apply(PipelinePlan& plan, const std::string& preset) const;

 private:
  std::map<std::string, PipelineTask> tasks_;
};

}  // namespace swp::presets
