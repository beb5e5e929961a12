#pragma once
// The preset catalogue: every TorchRec pipeline of seed 000 by name.

#include <span>
#include <string>
#include <string_view>

#include "swp/presets/preset.hpp"
#include "swp/presets/preset_options.hpp"
#include "swp/presets/task_bindings.hpp"

namespace swp::presets {

/// One catalogue entry: the preset's name, the TorchRec class it reproduces and one line on
/// its overlap strategy.
struct PresetInfo {
  std::string_view name;
  std::string_view torchrec_class;
  std::string_view description;
};

/// All 11 presets in seed 000's order: base, pt2, sparse_dist, sparse_dist_lite,
/// fused_sparse_dist, semi_sync, prefetch_sparse_dist, eval_sparse_dist,
/// eval_fused_sparse_dist, staged, sparse_dist_comp_autograd.
std::span<const PresetInfo> preset_catalogue();

/// The preset called `name` with no task bodies bound: ready to validate, print, serialize or
/// run on synthetic costs. Every phase's plan is validated.
/// Throws std::invalid_argument for an unknown name (listing the known ones) or a bad option
/// (naming it), PlanError if the options make an invalid plan (e.g. two staged stages with one
/// name).
/// Example: `auto plan = swp::presets::make_preset("sparse_dist").plan();`
Preset make_preset(std::string_view name, const PresetOptions& options = {});

/// The preset called `name` with the user's bodies bound by task name in every phase: its
/// plans are `P`s (`swp::Plan<Ctx>` for `TaskBindings<swp::Plan<Ctx>>`), ready to run on a
/// pipeline over Ctx.
/// Throws as above, and BindingError naming every task without a binding and every binding
/// that names no task of the preset.
/// Example: `auto preset = swp::presets::make_preset("sparse_dist", tasks);`
template <class P>
BasicPreset<P> make_preset(std::string_view name, const TaskBindings<P>& tasks,
                           const PresetOptions& options = {}) {
  return tasks.apply(make_preset(name, options));
}

}  // namespace swp::presets
