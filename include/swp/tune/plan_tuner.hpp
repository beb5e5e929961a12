#pragma once
// Tuning a plan: searching stage assignments that keep every rule, simulated on the sim backend.

#include <cstddef>
#include <optional>
#include <vector>

#include "swp/core/pipeline_plan.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/engine/plan.hpp"
#include "swp/tune/profile_result.hpp"
#include "swp/tune/profiled_costs.hpp"

namespace swp {

/// One stage per task, in the plan's task order.
using StageAssignment = std::vector<int>;

/// The stage assignments of `graph`'s tasks with stages in 0..max_depth−1 that keep every
/// stage rule: corollary 1 (an intra dependency's stage ≤ its task's stage), corollary 3 (an
/// inter dependency's stage − its task's stage ≤ 1) and some task on stage 0 (a plan whose
/// stages all start at 1 only spends a slot more on the same schedule). Nothing else of the
/// plan changes, so each assignment with `pipeline_depth` = max(stage) + 1 validates.
///
/// Returns the assignments in lexicographic order of the stages taken in the plan's topological
/// order (`graph.topological_order()`), or nothing when there are more than `limit`. The rules
/// are those of `check_stage_rules`. Throws std::invalid_argument when max_depth < 1 or the
/// intra dependencies form a cycle (a graph from `inspect`; `validate` rejects cycles).
/// Example: `auto all = swp::stage_assignments(swp::validate(plan), 3, 4096);`
std::optional<std::vector<StageAssignment>> stage_assignments(const PlanGraph& graph, int max_depth,
                                                              std::size_t limit);

/// `plan` with the stages of `stages` (one per task) and `pipeline_depth` = max(stage) + 1.
/// Throws std::invalid_argument when the sizes differ.
PipelinePlan with_stages(const PipelinePlan& plan, const StageAssignment& stages);

/// `plan`, its bodies kept, with the stages and depth of `tuned` — the `best` of
/// `tune_plan(plan.untyped(), ...)`: the tuned plan that runs.
/// Throws std::invalid_argument when `tuned` has other tasks (names, in order).
/// Example: `auto fast = swp::with_stages(plan, swp::tune_plan(plan.untyped(), {.max_depth = 3}).best);`
template <class Ctx>
Plan<Ctx> with_stages(Plan<Ctx> plan, const PipelinePlan& tuned) {
  bool same = plan.tasks.size() == tuned.tasks.size();
  for (std::size_t t = 0; same && t < tuned.tasks.size(); ++t)
    same = plan.tasks[t].task.name == tuned.tasks[t].task.name;
  if (!same)
    throw std::invalid_argument("with_stages: the tuned plan's tasks are not the plan's");
  for (std::size_t t = 0; t < tuned.tasks.size(); ++t)
    plan.tasks[t].schedule.stage = tuned.tasks[t].schedule.stage;
  plan.pipeline_depth = tuned.pipeline_depth;
  return plan;
}

/// The largest depth cap the tuner searches under: the space of stage assignments grows as
/// depth^tasks, and 64 iterations in flight is already more memory than a training step has.
inline constexpr int max_tune_depth = 64;

struct TuneOptions {
  /// Memory cap: stages 0..max_depth−1, so at most max_depth iterations (slots) in flight;
  /// 1..max_tune_depth. 0: the input plan's depth, so the tuned plan never holds more batches
  /// than the input; at most max_tune_depth, and a deeper input, which the search cannot
  /// reach, is measured with the finalists and kept when none is faster (kept_deep_input).
  int max_depth = 0;
  /// Iterations of the final measurement of the finalists and the input (as `swp run`); a
  /// plan whose steady state needs more (`min_steady_iters(depth)`, 2 × depth + 2) runs those.
  int iters = 200;
  /// Iterations per candidate during the search, cheap to repeat; raised as `iters` is to the
  /// fewest that measure a steady state at the candidate's depth.
  int search_iters = 48;
  /// The space is searched exhaustively when it holds at most this many assignments; beyond,
  /// a deterministic local search evaluates at most this many.
  std::size_t max_candidates = 4096;
  /// The best candidates of the search that are measured again with `iters`.
  std::size_t finalists = 4;
  /// Costs measured by TaskProfiler: when set, candidates are simulated with
  /// `with_profiled_costs(plan, *measured)` instead of the plan's synthetic costs (the returned
  /// plan keeps the input's costs; only its stages change).
  std::optional<ProfileResult> measured = std::nullopt;
  /// Where a measured task without a plan cost spends its time (see with_profiled_costs).
  MeasuredTimeOn costless_on = MeasuredTimeOn::device;
};

/// What tune_plan found. Both times are steady states measured in the same call with `iters`
/// iterations, or `min_steady_iters(depth)` where that is more.
struct TuneResult {
  PipelinePlan best;                ///< the input with the best stages (see with_stages)
  double us_per_iter = 0;           ///< `best`'s steady-state time per iteration
  double baseline_us_per_iter = 0;  ///< the input's
  int depth = 0;                    ///< `best`'s depth, max(stage) + 1
  int baseline_depth = 0;           ///< the input's
  int max_depth = 0;                ///< the cap searched under
  std::size_t candidates = 0;       ///< stage assignments simulated
  bool exhaustive = false;          ///< every assignment under the cap was simulated
  /// The input, deeper than max_tune_depth with no cap given (max_depth 0), beat every
  /// candidate under the cap and is `best` unchanged: `depth` is then above `max_depth`.
  bool kept_deep_input = false;

  /// baseline / best: above 1 when the tuned plan is faster.
  [[nodiscard]] double speedup() const {
    return us_per_iter > 0 ? baseline_us_per_iter / us_per_iter : 0;
  }
};

/// Searches the stage assignments of `plan` under a depth cap for the fastest on the clock
/// engine (whose periods are what stages mean; the data-flow engine fires on dependencies and
/// ignores them), simulating each on the sim backend with the plan's synthetic costs, or the
/// profiled ones of `options.measured` (task bodies are not run: tune `plan.untyped()` of a
/// `swp::Plan<Ctx>` and apply the result with `with_stages(plan, result.best)`).
///
/// Candidates are the `stage_assignments` under the cap when there are at most
/// `max_candidates` of them, else those a local search visits: hill climbing from the input
/// (clamped to the cap), then from all-stage-0 and from each task's topological level, moving
/// one task, or a task with all it feeds (or all that feed it), one stage up or down; the
/// steepest improving move is taken, evaluations stop at `max_candidates`. Each candidate runs
/// `search_iters` iterations; the `finalists` best and the input run `iters` again and the
/// fastest wins. A run never has fewer iterations than a steady state needs at its depth
/// (`min_steady_iters`): a shorter one would time the fill and drain too, and a deep plan
/// would look slower than it is. Ties within 1e-6 relative prefer the smaller depth, then the input's stages,
/// then the fewest tasks moved. When the input fits the cap it is a candidate, so the result
/// is never slower than the input. With the default cap (max_depth 0) an input deeper than
/// max_tune_depth runs with the finalists and is kept when none beats it (`kept_deep_input`):
/// only an explicit cap below the input's depth can make the result slower.
///
/// Throws PlanError for an invalid plan, std::invalid_argument for bad options (max_depth < 0
/// or > max_tune_depth, iters or search_iters < 1, max_candidates or finalists 0, a profile naming tasks the plan
/// does not have).
/// Example: `auto r = swp::tune_plan(plan, {.max_depth = 3}); std::cout << r.us_per_iter;`
TuneResult tune_plan(const PipelinePlan& plan, const TuneOptions& options = {});

}  // namespace swp
