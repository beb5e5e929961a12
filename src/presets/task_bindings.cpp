#include "swp/presets/task_bindings.hpp"

#include <set>

namespace swp::presets {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

TaskBindings& TaskBindings::bind(PipelineTask task) {
  if (task.name.empty()) throw BindingError("a task binding needs a name");
  const std::string name = task.name;
  if (!tasks_.emplace(name, std::move(task)).second)
    throw BindingError("task '" + name + "' is bound twice");
  return *this;
}

std::vector<std::string> TaskBindings::names() const {
  std::vector<std::string> names;
  for (const auto& [name, task] : tasks_) names.push_back(name);
  return names;
}

void TaskBindings::apply(PipelinePlan& plan, const std::string& preset) const {
  std::vector<std::string> missing, unknown;
  std::set<std::string> planned;
  for (const auto& t : plan.tasks) {
    planned.insert(t.task.name);
    if (!contains(t.task.name)) missing.push_back(t.task.name);
  }
  for (const auto& [name, task] : tasks_)
    if (!planned.count(name)) unknown.push_back(name);
  if (!missing.empty() || !unknown.empty()) {
    std::vector<std::string> all(planned.begin(), planned.end());
    std::string message = "preset '" + preset + "':";
    if (!missing.empty())
      message += std::string(missing.size() == 1 ? " no binding for task " : " no binding for tasks ") +
                 join(missing) + ";";
    if (!unknown.empty())
      message += std::string(unknown.size() == 1 ? " binding " : " bindings ") + join(unknown) +
                 (unknown.size() == 1 ? " names" : " name") + " no task of it;";
    message += " its tasks are " + join(all);
    throw BindingError(message);
  }
  for (auto& t : plan.tasks) {
    const PipelineTask& bound = tasks_.at(t.task.name);
    t.task.fn = bound.fn;
    t.task.io = bound.io;
  }
}

}  // namespace swp::presets
