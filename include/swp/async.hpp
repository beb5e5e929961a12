#pragma once
// The async layer: coroutines, typed futures, lanes, schedulers (own pool, Asio, sim), the
// submission sequencer, timers, and fibers for blocking bodies.

#include "swp/async/asio_scheduler.hpp"
#include "swp/async/co.hpp"
#include "swp/async/device_event.hpp"
#include "swp/async/fiber_bridge.hpp"
#include "swp/async/future.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/resumer.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/async/sequencer.hpp"
#include "swp/async/sim_scheduler.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/async/thread_pool_scheduler.hpp"
#include "swp/async/timer_queue.hpp"
