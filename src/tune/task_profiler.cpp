#include "swp/tune/task_profiler.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace swp::detail {

namespace {

double median(std::vector<double> values) {
  std::ranges::sort(values);
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void check(const ProfileTarget& target, const ProfileOptions& options) {
  if (options.warmup < 0) throw std::invalid_argument("profile: warmup must be at least 0");
  if (options.measure < 1) throw std::invalid_argument("profile: measure must be at least 1");
  if (options.rounds < 1) throw std::invalid_argument("profile: rounds must be at least 1");
  std::string unknown;
  for (const auto& name : options.skip_tasks)
    if (std::ranges::find(target.tasks, name) == target.tasks.end())
      unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  if (!unknown.empty()) throw std::invalid_argument("profile: skip_tasks names unknown task(s) " + unknown);
}

}  // namespace

ProfileResult profile_serial(const ProfileTarget& target, const ProfileOptions& options) {
  check(target, options);
  std::int64_t iter = 0;
  // Seconds per iteration of each round, each round bracketed by two synchronizations.
  auto median_round = [&] {
    std::vector<double> per_iter;
    for (int r = 0; r < options.rounds; ++r) {
      target.synchronize();
      const auto start = target.now();
      for (int k = 0; k < options.measure; ++k) target.run_iteration(iter++);
      target.synchronize();
      const std::chrono::duration<double> round = target.now() - start;
      per_iter.push_back(round.count() / options.measure);
    }
    return median(per_iter);
  };

  for (int k = 0; k < options.warmup; ++k) target.run_iteration(iter++);
  ProfileResult result;
  result.baseline_s = median_round();
  for (const auto& task : target.tasks) {
    if (options.skip_tasks.contains(task) || target.shortcut.contains(task)) continue;
    target.set_shortcut(task, true);
    try {
      target.run_iteration(iter++);  // caching: runs the task once, untimed
      const double with_shortcut = median_round();
      result.tasks.push_back({task, std::max(0.0, result.baseline_s - with_shortcut), with_shortcut});
    } catch (...) {
      target.set_shortcut(task, false);
      throw;
    }
    target.set_shortcut(task, false);
  }
  return result;
}

}  // namespace swp::detail
