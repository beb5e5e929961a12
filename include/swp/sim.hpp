#pragma once
// Pipeline-parallel simulation (seed 002): stage plans, rank groups, send/recv costs, the
// fill-drain estimate, the search space, and event-level schedules on the sim backend.

#include "swp/sim/pp_estimate.hpp"
#include "swp/sim/pp_schedule.hpp"
#include "swp/sim/pp_simulator.hpp"
#include "swp/sim/rank_groups.hpp"
#include "swp/sim/search_space.hpp"
#include "swp/sim/send_recv.hpp"
#include "swp/sim/stage_memory.hpp"
#include "swp/sim/stage_plan.hpp"
