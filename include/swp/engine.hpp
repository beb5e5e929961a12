#pragma once
// The engines: runtime, contexts, typed plans and task bodies, DataFlowPipeline and
// ClockPipeline.
// The Asio completion-token form is not here: include swp/engine/asio.hpp (or swp/asio.hpp).

#include "swp/engine/clock_pipeline.hpp"
#include "swp/engine/data_flow_pipeline.hpp"
#include "swp/engine/engine_timeouts.hpp"
#include "swp/engine/errors.hpp"
#include "swp/engine/failure_policy.hpp"
#include "swp/engine/iter_context.hpp"
#include "swp/engine/iterations.hpp"
#include "swp/engine/pipeline.hpp"
#include "swp/engine/plan.hpp"
#include "swp/engine/retired.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/run_stats.hpp"
#include "swp/engine/runtime.hpp"
#include "swp/engine/shortcut.hpp"
#include "swp/engine/source.hpp"
#include "swp/engine/stop_scope.hpp"
#include "swp/engine/task_body.hpp"
#include "swp/engine/task_observer.hpp"
#include "swp/engine/task_scope.hpp"
