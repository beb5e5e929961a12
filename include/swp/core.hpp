#pragma once
// The plan model: tasks, schedules, dependencies, validation, orders, tables, analysis, JSON.

#include "swp/core/declared_io.hpp"
#include "swp/core/enqueue_order.hpp"
#include "swp/core/pipeline_plan.hpp"
#include "swp/core/pipeline_task.hpp"
#include "swp/core/plan_error.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/core/plan_json.hpp"
#include "swp/core/schedule_table.hpp"
#include "swp/core/stage_analysis.hpp"
#include "swp/core/stage_rules.hpp"
#include "swp/core/synthetic_cost.hpp"
#include "swp/core/task_ref.hpp"
#include "swp/core/task_schedule.hpp"
#include "swp/core/topological_order.hpp"
