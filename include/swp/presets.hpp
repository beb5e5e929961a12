#pragma once
// The presets layer: TorchRec's training and eval pipelines (seed 000) as plan factories.

#include "swp/presets/preset.hpp"
#include "swp/presets/preset_options.hpp"
#include "swp/presets/preset_registry.hpp"
#include "swp/presets/preset_runner.hpp"
#include "swp/presets/recsys_costs.hpp"
#include "swp/presets/task_bindings.hpp"
