#pragma once
// The tune layer, above the engines: the TaskProfiler, synthetic runs of a plan's costs,
// profiled costs, and the search behind `swp tune`.

#include "swp/tune/plan_tuner.hpp"
#include "swp/tune/profile_result.hpp"
#include "swp/tune/profiled_costs.hpp"
#include "swp/tune/synthetic_run.hpp"
#include "swp/tune/task_profiler.hpp"
