#pragma once
// The async layer: coroutines, typed futures, lanes, schedulers, the submission sequencer.

#include "swp/async/co.hpp"
#include "swp/async/device_event.hpp"
#include "swp/async/future.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/resumer.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/sequencer.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
