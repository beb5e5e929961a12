#pragma once
// Preset: a named overlap strategy — its plan (or plans, in phases) and its run-time hooks.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "swp/core/pipeline_plan.hpp"

namespace swp::presets {

/// A stretch of a run that uses one plan. Most presets have one phase; SemiSync starts with a
/// synchronous warm-up, PT2 with eager iterations before its compile step.
/// `P` is the plan type: a plain PipelinePlan (PresetPhase), or a plan with bodies such as
/// swp::Plan<Ctx> once TaskBindings bound the user's bodies.
template <class P>
struct BasicPresetPhase {
  std::string label;
  P plan;
  /// Batches this phase takes; empty: until the data ends (always so for the last phase).
  std::optional<std::int64_t> batches;
  /// Runs on the driving thread before the phase's first batch (PT2: the compile step).
  std::function<void()> on_enter = {};
};

/// What a preset factory returns: plain data plus callbacks, so it depends on the plan model
/// only; PresetRunner drives it on any engine. `Preset` has plain plans;
/// `make_preset(name, tasks)` returns a `BasicPreset<swp::Plan<Ctx>>` whose plans carry the
/// bodies bound by name (see TaskBindings).
///
/// The plans of all phases have the same tasks (names), so one set of bindings serves them all.
template <class P>
struct BasicPreset {
  std::string name;
  std::vector<BasicPresetPhase<P>> phases;  ///< at least one; the last is the steady state
  /// Lanes that want a thread of their own (RuntimeOptions::dedicated_lanes): the eval
  /// pipelines' background loader.
  std::set<std::string> dedicated_lanes;
  /// Run once a pipeline of this preset has been filled (StagedTrainPipeline fill callbacks).
  std::function<void()> on_filled = {};
  /// Run when the data source first comes back empty (StagedTrainPipeline data-exhausted
  /// callbacks).
  std::function<void()> on_data_exhausted = {};

  /// The steady-state plan (the last phase's). On a temporary Preset it is returned by value,
  /// so `for (auto& t : make_preset("base").plan().tasks)` does not dangle.
  [[nodiscard]] const P& plan() const& { return phases.back().plan; }
  [[nodiscard]] P& plan() & { return phases.back().plan; }
  [[nodiscard]] P plan() && { return std::move(phases.back().plan); }
  /// The phase called `label`, or nullptr.
  [[nodiscard]] const BasicPresetPhase<P>* phase(const std::string& label) const {
    for (const auto& p : phases)
      if (p.label == label) return &p;
    return nullptr;
  }
};

/// A preset phase with a plain plan.
using PresetPhase = BasicPresetPhase<PipelinePlan>;
/// A preset with plain plans, as the factories make it: no bodies.
using Preset = BasicPreset<PipelinePlan>;

}  // namespace swp::presets
