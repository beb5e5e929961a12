#pragma once
// TaskBindings: the user's task bodies, by task name, for a preset's plans.

#include <concepts>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "swp/core/declared_io.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/presets/preset.hpp"

namespace swp::presets {

/// A binding that does not fit a preset: a task left without a body, a body for a task the
/// preset does not have, or a name bound twice. `what()` names the preset and the task(s).
class BindingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// What TaskBindings binds into: a plan type with typed bodies, made from a plain plan and
/// binding a body by task name — swp::Plan<Ctx>. The presets layer names no engine type; the
/// plan type is the caller's.
template <class P>
concept PlanWithBodies = requires(P& plan, const typename P::body_type& body) {
  typename P::context_type;
  requires std::constructible_from<P, PipelinePlan>;
  plan.bind(std::string{}, body);
  plan.declare_io(std::string{}, DeclaredIO{});
};

namespace detail {
/// Throws BindingError naming `preset` and every task of `plan` not in `bound`, and every name
/// in `bound` that is no task of `plan`.
void check_bindings(const PipelinePlan& plan, const std::vector<std::string>& bound,
                    const std::string& preset);
}  // namespace detail

/// The user's bodies by task name, for the plans of a preset, each one made for `P` (a
/// `swp::Plan<Ctx>`), so a body for another context type does not compile.
/// `make_preset(name, tasks)` binds them into every phase of the preset.
///
/// Completion: binding only stores; nothing runs. Errors: BindingError (see bind and apply).
/// Example:
/// ```
/// swp::presets::TaskBindings<swp::Plan<Ctx>> tasks;
/// tasks.bind("H2D", copy_batch)
///      .bind("Forward", forward, swp::writes(&Fields::logits));
/// auto preset = swp::presets::make_preset("base", tasks);   // throws BindingError if short
/// ```
template <PlanWithBodies P>
class TaskBindings {
 public:
  using body_type = typename P::body_type;

  /// Binds `fn`, a body for P's context type, to the task called `name`, with the task's
  /// DeclaredIO (state outside the context it reads and writes).
  /// Throws BindingError when the name is empty or bound already.
  template <class Fn>
    requires std::constructible_from<body_type, Fn>
  TaskBindings& bind(std::string name, Fn&& fn, std::vector<DeclaredIO> io = {}) {
    return bind(std::move(name), body_type(std::forward<Fn>(fn)), std::move(io));
  }

  /// As above, declaring the context fields the body writes (swp::writes): a shortcut of the
  /// task replays them.
  template <class Fn, class Writes>
    requires std::constructible_from<body_type, Fn, const Writes&>
  TaskBindings& bind(std::string name, Fn&& fn, const Writes& writes, std::vector<DeclaredIO> io = {}) {
    return bind(std::move(name), body_type(std::forward<Fn>(fn), writes), std::move(io));
  }

  /// Binds a prepared body and its DeclaredIO to the task called `name`.
  /// Throws BindingError when the name is empty or bound already.
  TaskBindings& bind(std::string name, body_type body, std::vector<DeclaredIO> io = {}) {
    if (name.empty()) throw BindingError("a task binding needs a name");
    if (tasks_.count(name) != 0) throw BindingError("task '" + name + "' is bound twice");
    tasks_.emplace(std::move(name), Binding{std::move(body), std::move(io)});
    return *this;
  }

  [[nodiscard]] bool contains(const std::string& name) const { return tasks_.count(name) != 0; }
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }
  /// The bound names, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, binding] : tasks_) out.push_back(name);
    return out;
  }

  /// `plan` (a phase of preset `preset`) with every task bound to its body and DeclaredIO,
  /// schedules and costs kept. Throws BindingError naming `preset` and every task left
  /// unbound, or every bound name that is no task of `plan`.
  [[nodiscard]] P apply(const PipelinePlan& plan, const std::string& preset) const {
    detail::check_bindings(plan, names(), preset);
    P bound(plan);
    for (const auto& [name, binding] : tasks_) {
      bound.bind(name, binding.body);
      for (const DeclaredIO& io : binding.io) bound.declare_io(name, io);
    }
    return bound;
  }

  /// `preset` with every phase bound (see the other apply).
  [[nodiscard]] BasicPreset<P> apply(const Preset& preset) const {
    BasicPreset<P> out{preset.name, {}, preset.dedicated_lanes, preset.on_filled,
                       preset.on_data_exhausted};
    for (const PresetPhase& phase : preset.phases)
      out.phases.push_back({phase.label, apply(phase.plan, preset.name), phase.batches, phase.on_enter});
    return out;
  }

 private:
  struct Binding {
    body_type body;
    std::vector<DeclaredIO> io;
  };
  std::map<std::string, Binding> tasks_;
};

}  // namespace swp::presets
