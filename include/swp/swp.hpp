#pragma once
// Umbrella header: everything public in swp.

#include "swp/async.hpp"
#include "swp/comm.hpp"
#include "swp/config.hpp"
#include "swp/core.hpp"
#include "swp/device.hpp"
#include "swp/engine.hpp"
#include "swp/io.hpp"
#include "swp/lazy.hpp"
#include "swp/presets.hpp"
#include "swp/sim.hpp"
#include "swp/trace.hpp"
#include "swp/tune.hpp"
