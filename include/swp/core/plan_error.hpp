#pragma once
// PlanError: the one exception type for invalid plans, carrying every rule a plan breaks.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace swp {

/// The rules a plan is checked against (DESIGN.md decision 6).
enum class PlanRule {
  no_tasks,          ///< the plan declares no task
  empty_name,        ///< a task has an empty name, stream name or thread group name
  duplicate_name,    ///< two tasks share a name
  unknown_task,      ///< a dependency names a task that is not in the plan
  negative_stage,    ///< stage < 0
  stage_limit,       ///< stage > max_stage (so depth > max_stage + 1)
  intra_cycle,       ///< intra-iteration dependencies form a cycle
  corollary_1,       ///< intra dep: dep.stage ≤ task.stage
  corollary_3,       ///< inter dep: dep.stage − task.stage ≤ 1
  depth_mismatch,    ///< declared pipeline_depth ≠ max(stage) + 1
  stream_alias,      ///< a stream alias that is empty, aliases "default", itself or another
                     ///< alias, or that no task uses
  cost_limit,        ///< a synthetic cost outside [0, max_cost_us] (or not a number), or a
                     ///< negative jitter_every
  control_character, ///< a task, stream or lane name holds a control character (NUL, newline,
                     ///< ESC, ...), which would reach terminals and line-based outputs raw
  stream_priority,   ///< two tasks on one stream (aliases resolved) give it different
                     ///< priorities: a stream has one
  name_encoding,     ///< a task, stream, lane or alias name is not well-formed UTF-8, which
                     ///< a plan file (JSON) cannot hold
};

/// Short name of a rule as printed in messages ("corollary 1", "duplicate name", ...).
std::string_view rule_name(PlanRule rule);

/// Structural rules make a plan meaningless to order or print (names, references, stages,
/// cycles); the others (corollaries, depth, stream aliases and priorities, costs) only make it
/// unsafe to run.
bool is_structural(PlanRule rule);

/// One broken rule: which rule, the tasks involved and a sentence that names them.
struct PlanViolation {
  PlanRule rule;
  std::vector<std::string> tasks;
  std::string message;
};

/// Thrown by `validate()` (and the engines' constructors) for an invalid plan. `what()` lists
/// every violation, one per line, each naming its tasks and rule.
class PlanError : public std::runtime_error {
 public:
  explicit PlanError(std::vector<PlanViolation> violations);

  [[nodiscard]] const std::vector<PlanViolation>& violations() const { return violations_; }

  /// True when some violation is of `rule`.
  [[nodiscard]] bool breaks(PlanRule rule) const;

 private:
  std::vector<PlanViolation> violations_;
};

}  // namespace swp
