#pragma once
// A pipeline's shortcut configuration and caches (not for direct use; see shortcut.hpp and
// Pipeline::enable_shortcut).

#include <any>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/detail/engine.hpp"
#include "swp/engine/detail/engine_handle.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/shortcut.hpp"

namespace swp::detail {

/// What the caching execution of one task left: restorers of its declared fields, a copy of
/// its output value, and each DeclaredIO's captured state.
template <class Ctx>
struct ShortcutCache {
  std::vector<typename Writes<Ctx>::Restore> fields;
  std::unique_ptr<OutputBox> output;
  std::vector<std::any> io;
};

/// Which tasks of a pipeline are shortcut, and what each one's caching execution left.
/// Instances of one task run one at a time on its lane (and serial runs on the caller's
/// thread), so a task's cache needs no lock; the configuration changes only while drained.
/// Every pipeline has one, and most never shortcut a task: per task it holds a flag and a
/// pointer (a task's DeclaredIO is the plan graph's, passed in by its ShortcutRoutine).
template <class Ctx>
class ShortcutState {
 public:
  /// For a plan of `tasks` tasks, none of them shortcut.
  explicit ShortcutState(std::size_t tasks) : on_(tasks, 0), cache_(tasks) {}

  /// Whether `task` is shortcut: the one flag test normal execution costs.
  [[nodiscard]] bool enabled(TaskIndex task) const noexcept { return on_[task] != 0; }

  /// The names of the shortcut tasks.
  [[nodiscard]] std::set<std::string> names(const PlanGraph& graph) const {
    std::set<std::string> out;
    for (TaskIndex t = 0; t < graph.size(); ++t)
      if (on_[t] != 0) out.insert(graph.name(t));
    return out;
  }

  /// enable_shortcut / disable_shortcut of the named tasks of `core`'s plan; disabling drops
  /// the caches. Changes nothing when it throws.
  void set(const Engine& core, const std::vector<std::string_view>& names, bool on) {
    core.require_between_runs(on ? "enable_shortcut" : "disable_shortcut");
    const PlanGraph& graph = core.graph();
    std::vector<TaskIndex> tasks;
    std::string unknown;
    for (std::string_view name : names) {
      const auto index = graph.find(name);  // a hash lookup: disable_shortcut() stays linear
      if (!index) {
        unknown += (unknown.empty() ? "'" : ", '") + std::string(name) + "'";
        continue;
      }
      const TaskIndex found = *index;
      const OutputBox* box = output_box(core.core(), 0, found);
      if (on && box != nullptr && !box->copyable())
        throw std::invalid_argument("enable_shortcut: task '" + graph.name(found) +
                                    "' returns a value of a type that cannot be copied, so a "
                                    "shortcut cannot replay it");
      tasks.push_back(found);
    }
    if (!unknown.empty())
      throw std::invalid_argument(std::string(on ? "enable" : "disable") +
                                  "_shortcut: unknown task(s) " + unknown);
    for (TaskIndex t : tasks) {
      if (!on) cache_[t].reset();
      on_[t] = on ? 1 : 0;
    }
  }

  /// Replay: when `task` has a cache, writes a copy of it back into `ctx`, `box` and the
  /// states of its DeclaredIO `io` and returns true; without one (the caching execution)
  /// returns false.
  bool replay(TaskIndex task, Ctx& ctx, OutputBox* box, const std::vector<DeclaredIO>& io) const {
    const ShortcutCache<Ctx>* cache = cache_[task].get();
    if (cache == nullptr) return false;
    for (const auto& restore : cache->fields) restore(ctx);
    if (box != nullptr) box->assign_from(*cache->output);
    for (std::size_t k = 0; k < io.size(); ++k)
      if (io[k].restore) io[k].restore(cache->io[k]);
    return true;
  }

  /// Caching: after `task`'s body ran, snapshots the fields `writes` declares (none: nullptr),
  /// its output value and the states of its DeclaredIO `io`.
  void cache(TaskIndex task, const Ctx& ctx, const OutputBox* box, const Writes<Ctx>* writes,
             const std::vector<DeclaredIO>& io) {
    auto fresh = std::make_unique<ShortcutCache<Ctx>>();
    if (writes != nullptr)
      for (const auto& snapshot : writes->fields()) fresh->fields.push_back(snapshot(ctx));
    if (box != nullptr) fresh->output = box->clone();
    for (const DeclaredIO& declared : io)
      fresh->io.push_back(declared.capture ? declared.capture() : std::any{});
    cache_[task] = std::move(fresh);
  }

 private:
  std::vector<unsigned char> on_;  // per task: shortcut enabled
  // Per task: what its caching execution left (null: nothing yet).
  std::vector<std::unique_ptr<ShortcutCache<Ctx>>> cache_;
};

}  // namespace swp::detail
