#pragma once
// Indexes of a plan's public lists (tasks by name, dependencies by their names pair), kept
// beside the lists so that building a plan of n tasks costs O(n) rather than a scan of the
// list per task added. The lists are public members a user may also change directly, so an
// index trusts none of its entries blindly: see each class.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "swp/core/detail/flat_positions.hpp"
#include "swp/core/pipeline_plan.hpp"

namespace swp::detail {

/// Which {task, depends_on} name pairs a dependency list holds, indexed incrementally: each
/// look indexes what was appended since the last one (appending is the documented way to
/// change the list); a list that shrank is indexed again. An entry changed in place is not
/// seen; Plan::bound_bodies re-checks every declared read against a fresh index, so that can
/// only end in its clear error, never in a dependency silently missing.
class DependencyIndex {
  // Whether the entry at a position of `deps` is the pair `d` names. (First: the members
  // below deduce its type.)
  static auto same_as(const std::vector<Dependency>& deps, const Dependency& d) noexcept {
    return [&deps, &d](std::size_t p) {
      return deps[p].task.name() == d.task.name() &&
             deps[p].depends_on.name() == d.depends_on.name();
    };
  }

 public:
  // A cache: a copy (or a move) starts empty and indexes its own list when first asked.
  DependencyIndex() = default;
  DependencyIndex(const DependencyIndex&) noexcept {}
  DependencyIndex& operator=(const DependencyIndex&) noexcept {
    reset();
    return *this;
  }

  [[nodiscard]] bool lists(const std::vector<Dependency>& deps, const Dependency& dep) {
    index(deps);
    return positions_.find(hash(dep), same_as(deps, dep)) != FlatPositions::npos;
  }

  /// Starts loading the slot `lists(deps, dep)` probes first: a caller checking many pairs
  /// issues the next ones' misses while it checks this one (see FlatPositions::prefetch).
  void prefetch(const std::vector<Dependency>& deps, const Dependency& dep) {
    index(deps);
    positions_.reserve(deps.size());  // the table has slots, even for an empty list
    positions_.prefetch(hash(dep));
  }

 private:
  // Indexes what was appended since the last look. A batch (a list given whole) is hashed
  // first, so the slots of the entries `ahead` further on are fetched while one is placed, as
  // PlanGraph::resolve does for names: at 100k entries the table is megabytes, and each
  // placement a miss to memory otherwise. (The clamped index instead of a branch: GCC 12
  // drops a prefetch under a branch.)
  void index(const std::vector<Dependency>& deps) {
    if (deps.size() < indexed_) reset();
    const std::size_t end = deps.size();
    constexpr std::size_t ahead = 8;
    if (end - indexed_ <= ahead) {  // appended one by one (Plan::add): nothing to overlap
      for (; indexed_ < end; ++indexed_) positions_.add(hash(deps[indexed_]), indexed_);
      return;
    }
    positions_.reserve(end);
    std::vector<std::uint64_t> hashes(end - indexed_);
    for (std::size_t k = 0; k < hashes.size(); ++k) hashes[k] = hash(deps[indexed_ + k]);
    for (std::size_t k = 0; k < hashes.size(); ++k, ++indexed_) {
      positions_.prefetch(hashes[std::min(k + ahead, hashes.size() - 1)]);
      positions_.add(hashes[k], indexed_);
    }
  }

  void reset() {
    positions_.clear();
    indexed_ = 0;
  }

  static std::uint64_t hash(const Dependency& d) noexcept {
    const std::size_t a = std::hash<std::string_view>{}(d.task.name());
    return a ^ (std::hash<std::string_view>{}(d.depends_on.name()) + 0x9e3779b97f4a7c15ULL +
                (a << 6) + (a >> 2));
  }

  FlatPositions positions_;  // of deps' entries, by their names pair
  std::size_t indexed_ = 0;
};

/// Whether `deps` holds every pair of `wanted` (by names) at positions that do not decrease
/// along `wanted`: one sequential pass. Plan::add appends each declared read to the list as it
/// declares it (or finds it there), so a list only appended to holds them so; false says only
/// that this pass did not find them, and the caller asks an index.
[[nodiscard]] inline bool lists_in_order(const std::vector<Dependency>& deps,
                                         const std::vector<Dependency>& wanted) noexcept {
  std::size_t p = 0;
  for (const Dependency& d : wanted) {
    while (p < deps.size() && (deps[p].task.name() != d.task.name() ||
                               deps[p].depends_on.name() != d.depends_on.name()))
      ++p;
    if (p == deps.size()) return false;
  }
  return true;
}

/// The position of each task name in a task list (the first, as a scan would find), indexed
/// incrementally as the list grows. A hit is checked against the list before it is returned
/// and a miss re-indexes the whole list once, so a list changed in place (a task renamed,
/// removed or reordered) gives the same answer as a scan.
class TaskNameIndex {
  // Whether the task at a position of `tasks` (still there) is called `name`. (First: the
  // members below deduce its type.)
  static auto named(const std::vector<PlannedTask>& tasks, const std::string& name) noexcept {
    return [&tasks, &name](std::size_t p) { return p < tasks.size() && tasks[p].task.name == name; };
  }

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
  // A name listed twice is found at its first position (FlatPositions::find gives the
  // smallest), as a scan finds it.
  void extend(const std::vector<PlannedTask>& tasks) {
    for (; indexed_ < tasks.size(); ++indexed_)
      positions_.add(std::hash<std::string_view>{}(tasks[indexed_].task.name), indexed_);
  }
  std::size_t lookup(const std::vector<PlannedTask>& tasks, const std::string& name) const {
    const std::size_t t = positions_.find(std::hash<std::string_view>{}(name), named(tasks, name));
    return t == FlatPositions::npos ? tasks.size() : t;
  }

  FlatPositions positions_;  // of tasks' entries, by name
  std::size_t indexed_ = 0;
};

}  // namespace swp::detail
