#include "swp/presets/task_bindings.hpp"

#include <set>

namespace swp::presets::detail {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

void check_bindings(const PipelinePlan& plan, const std::vector<std::string>& bound,
                    const std::string& preset) {
  const std::set<std::string> names(bound.begin(), bound.end());
  std::vector<std::string> missing, unknown;
  std::set<std::string> planned;
  for (const auto& t : plan.tasks) {
    planned.insert(t.task.name);
    if (!names.count(t.task.name)) missing.push_back(t.task.name);
  }
  for (const auto& name : names)
    if (!planned.count(name)) unknown.push_back(name);
  if (missing.empty() && unknown.empty()) return;
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

}  // namespace swp::presets::detail
