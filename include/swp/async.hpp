#pragma once
// The async layer: coroutines, typed futures, lanes, schedulers (own pool, sim), the
// submission sequencer, timers, and fibers for blocking bodies. The Asio scheduler is not
// here: include swp/async/asio_scheduler.hpp (or swp/asio.hpp), which brings Asio with it.

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
#include "swp/async/thread_start.hpp"
#include "swp/async/timer_queue.hpp"
