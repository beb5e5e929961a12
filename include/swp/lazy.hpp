#pragma once
// The lazy layer: named segments, Deferred values and the LazyScheduler that orders them.

#include "swp/lazy/deferred.hpp"
#include "swp/lazy/lazy_error.hpp"
#include "swp/lazy/lazy_options.hpp"
#include "swp/lazy/lazy_scheduler.hpp"
#include "swp/lazy/lazy_state.hpp"
#include "swp/lazy/segment.hpp"
#include "swp/lazy/segment_observer.hpp"
