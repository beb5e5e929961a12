#pragma once
// Indexes of a plan's public lists (tasks by name, dependencies by their names pair), kept
// beside the lists so that building a plan of n tasks costs O(n) rather than a scan of the
// list per task added. The lists are public members a user may also change directly, so an
// index trusts none of its entries blindly: see each class.

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "swp/core/pipeline_plan.hpp"

namespace swp::detail {

/// Which {task, depends_on} name pairs a dependency list holds, indexed incrementally: each
/// look indexes what was appended since the last one (appending is the documented way to
/// change the list); a list that shrank is indexed again. An entry changed in place is not
/// seen; Plan::bound_bodies re-checks every declared read against a fresh index, so that can
/// only end in its clear error, never in a dependency silently missing.
class DependencyIndex {
 public:
  // A cache: a copy (or a move) starts empty and indexes its own list when first asked.
  DependencyIndex() = default;
  DependencyIndex(const DependencyIndex&) noexcept {}
  DependencyIndex& operator=(const DependencyIndex&) noexcept {
    reset();
    return *this;
  }

  [[nodiscard]] bool lists(const std::vector<Dependency>& deps, const Dependency& dep) {
    if (deps.size() < indexed_) reset();
    for (; indexed_ < deps.size(); ++indexed_) pairs_.insert(key(deps[indexed_]));
    return pairs_.contains(key(dep));
  }

 private:
  void reset() {
    pairs_.clear();
    indexed_ = 0;
  }

  using Key = std::pair<std::string, std::string>;
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      const std::size_t a = std::hash<std::string>{}(k.first);
      return a ^ (std::hash<std::string>{}(k.second) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    }
  };
  static Key key(const Dependency& d) { return {d.task.name(), d.depends_on.name()}; }

  std::unordered_set<Key, Hash> pairs_;
  std::size_t indexed_ = 0;
};

/// The position of each task name in a task list (the first, as a scan would find), indexed
/// incrementally as the list grows. A hit is checked against the list before it is returned
/// and a miss re-indexes the whole list once, so a list changed in place (a task renamed,
/// removed or reordered) gives the same answer as a scan.
class TaskNameIndex {
 public:
  // A cache: a copy (or a move) starts empty and indexes its own list when first asked.
  TaskNameIndex() = default;
  TaskNameIndex(const TaskNameIndex&) noexcept {}
  TaskNameIndex& operator=(const TaskNameIndex&) noexcept {
    reset();
    return *this;
  }

  /// The index of the first task called `name`, or tasks.size().
  [[nodiscard]] std::size_t find(const std::vector<PlannedTask>& tasks,
                                 const std::string& name) {
    if (tasks.size() < indexed_) reset();
    extend(tasks);
    if (const std::size_t t = lookup(tasks, name); t < tasks.size()) return t;
    reset();  // a miss, or a stale hit: what a scan of the list as it is now says
    extend(tasks);
    return lookup(tasks, name);
  }

 private:
  void reset() {
    positions_.clear();
    indexed_ = 0;
  }
  void extend(const std::vector<PlannedTask>& tasks) {
    for (; indexed_ < tasks.size(); ++indexed_) positions_.emplace(tasks[indexed_].task.name, indexed_);
  }
  std::size_t lookup(const std::vector<PlannedTask>& tasks, const std::string& name) const {
    const auto it = positions_.find(name);
    if (it == positions_.end() || it->second >= tasks.size() || tasks[it->second].task.name != name)
      return tasks.size();
    return it->second;
  }

  std::unordered_map<std::string, std::size_t> positions_;
  std::size_t indexed_ = 0;
};

}  // namespace swp::detail
