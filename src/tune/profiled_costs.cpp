#include "swp/tune/profiled_costs.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "swp/core/synthetic_cost.hpp"

namespace swp {

namespace {

SyntheticCost measured_cost(SyntheticCost cost, double exposed_us, MeasuredTimeOn costless) {
  const double planned = cost.cpu_us + cost.mean_device_us();
  if (planned <= 0) {
    if (costless == MeasuredTimeOn::cpu) return SyntheticCost{.cpu_us = exposed_us};
    return SyntheticCost{.device_us = exposed_us};
  }
  const double scale = exposed_us / planned;
  cost.cpu_us *= scale;
  cost.device_us *= scale;
  cost.jitter_device_us *= scale;
  return cost;
}

// A measured time so long that the scaled cost leaves the plan's limits would make the costed
// plan invalid, which is the profile's fault: named here, by task (the plan was valid).
void check_scaled(const std::string& task, const SyntheticCost& cost, double exposed_us) {
  const double longest = std::max({cost.cpu_us, cost.device_us, cost.jitter_device_us});
  if (longest <= max_cost_us) return;
  std::ostringstream what;
  what << "profiled task '" << task << "': an exposed time of " << exposed_us
       << " us scales its cost to " << longest << " us, past the limit of " << max_cost_us
       << " us per task";
  throw std::invalid_argument(what.str());
}

}  // namespace

PipelinePlan with_profiled_costs(const PipelinePlan& plan, const ProfileResult& profile,
                                 MeasuredTimeOn costless) {
  PipelinePlan costed = plan;
  std::string unknown;
  std::set<std::string> seen;
  for (const TaskExposure& measured : profile.tasks) {
    if (!seen.insert(measured.task).second)
      throw std::invalid_argument("the profile measures task '" + measured.task + "' twice");
    if (!std::isfinite(measured.exposed_s) || measured.exposed_s < 0)
      throw std::invalid_argument("profiled task '" + measured.task +
                                  "': exposed time must be a finite number >= 0");
    bool found = false;
    for (PlannedTask& t : costed.tasks) {
      if (t.task.name != measured.task) continue;
      t.cost = measured_cost(t.cost, measured.exposed_s * 1e6, costless);
      check_scaled(measured.task, t.cost, measured.exposed_s * 1e6);
      found = true;
    }
    if (!found) unknown += (unknown.empty() ? "'" : ", '") + measured.task + "'";
  }
  if (!unknown.empty())
    throw std::invalid_argument("the profile names task(s) the plan does not have: " + unknown);
  return costed;
}

}  // namespace swp
