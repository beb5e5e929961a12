#include "swp/core/plan_error.hpp"

#include <algorithm>

namespace swp {

std::string_view rule_name(PlanRule rule) {
  switch (rule) {
    case PlanRule::no_tasks: return "no tasks";
    case PlanRule::empty_name: return "empty name";
    case PlanRule::duplicate_name: return "duplicate name";
    case PlanRule::unknown_task: return "unknown task";
    case PlanRule::negative_stage: return "negative stage";
    case PlanRule::stage_limit: return "stage limit";
    case PlanRule::intra_cycle: return "intra-iteration cycle";
    case PlanRule::corollary_1: return "corollary 1";
    case PlanRule::corollary_3: return "corollary 3";
    case PlanRule::depth_mismatch: return "depth mismatch";
    case PlanRule::stream_alias: return "stream alias";
    case PlanRule::cost_limit: return "cost limit";
    case PlanRule::control_character: return "control character";
    case PlanRule::stream_priority: return "stream priority";
    case PlanRule::name_encoding: return "name encoding";
  }
  return "unknown rule";
}

bool is_structural(PlanRule rule) {
  return rule != PlanRule::corollary_1 && rule != PlanRule::corollary_3 &&
         rule != PlanRule::depth_mismatch && rule != PlanRule::stream_alias &&
         rule != PlanRule::cost_limit && rule != PlanRule::stream_priority;
}

namespace {
std::string join_messages(const std::vector<PlanViolation>& violations) {
  std::string text = "invalid plan:";
  for (const auto& v : violations) text += "\n  " + v.message;
  return text;
}
}  // namespace

PlanError::PlanError(std::vector<PlanViolation> violations)
    : std::runtime_error(join_messages(violations)), violations_(std::move(violations)) {}

bool PlanError::breaks(PlanRule rule) const {
  return std::ranges::any_of(violations_, [rule](const auto& v) { return v.rule == rule; });
}

}  // namespace swp
