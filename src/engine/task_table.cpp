// TaskTable: each task's TaskInfo, built from the plan graph and the runtime.

#include "swp/engine/detail/task_table.hpp"

#include <stdexcept>
#include <string>

#include "swp/engine/runtime.hpp"

namespace swp::detail {

TaskTable::TaskTable(const PlanGraph& graph, Runtime& runtime) {
  const std::size_t n = graph.size();
  if (n >= std::size_t{1} << 31)
    throw std::length_error("a pipeline runs at most 2^31 - 1 tasks; the plan has " +
                            std::to_string(n));
  info_.resize(n);
  // Each distinct lane and stream resolved once (Runtime::lane and ::stream lock and look up
  // by name), and how many tasks each lane has.
  streams_.reserve(graph.streams().size());
  for (std::size_t s = 0; s < graph.streams().size(); ++s)
    streams_.push_back(&runtime.stream(graph.streams()[s], graph.priority_of_stream(s)));
  std::vector<Lane*> lanes;
  lanes.reserve(graph.lanes().size());
  for (const std::string& name : graph.lanes()) lanes.push_back(&runtime.lane(name));
  std::vector<int> tasks_on_lane(lanes.size(), 0);
  for (TaskIndex t = 0; t < n; ++t) {
    TaskInfo& info = info_[t];
    info.task = static_cast<std::uint32_t>(t);
    info.lane = lanes[graph.lane_index(t)];
    ++tasks_on_lane[graph.lane_index(t)];
    info.stream = streams_[graph.stream_index(t)];
    info.ordered = graph.schedule(t).globally_ordered;
    info.intra = graph.intra_deps(t);
    info.inter = graph.inter_deps(t);
    info.proceeds_guarded = info.ordered || !info.inter.empty();
  }
  alone_on_lane_.resize(n);
  for (TaskIndex t = 0; t < n; ++t) alone_on_lane_[t] = tasks_on_lane[graph.lane_index(t)] == 1;
  intra_succ_ = SuccessorLists(n, [&graph](TaskIndex t) { return graph.intra_deps(t); });
  inter_succ_ = SuccessorLists(n, [&graph](TaskIndex t) { return graph.inter_deps(t); });
  for (TaskIndex t = 0; t < n; ++t) {
    info_[t].intra_succ = intra_succ_[t];
    info_[t].inter_succ = inter_succ_[t];
  }
  serial_order_ = graph.topological_order();
}

void TaskTable::count_joins(const ReleasePolicy& policy) {
  completion_count_ = 0;
  for (TaskInfo& info : info_) {
    info.degree_first = in_degree(policy, info.task, 0);
    info.degree = in_degree(policy, info.task, 1);
    // Under a policy that releases every instance, only the sinks count (see
    // IterationSync::remaining).
    info.counts_completion = !policy.releases_every_instance() || info.intra_succ.empty();
    if (info.counts_completion) ++completion_count_;
  }
}

int TaskTable::in_degree(const ReleasePolicy& policy, TaskIndex t,
                         std::int64_t iter) const noexcept {
  const TaskInfo& info = info_[t];
  int n = static_cast<int>(info.intra.size());
  if (iter > 0) n += static_cast<int>(info.inter.size());
  // The lane edge (see LaneClaim).
  if (iter > 0 && info.lane_edge) ++n;
  return n + policy.extra_degree(t, iter);
}

}  // namespace swp::detail
