#pragma once
// DataFlowRelease: the data-flow engine's release policy — an instance goes to its lane as soon
// as everything it depends on finished and its iteration holds a slot.

#include <vector>

#include "swp/engine/detail/alone_window.hpp"
#include "swp/engine/detail/release_policy.hpp"

namespace swp::detail {

/// The counter of (task, i) counts its intra dependencies, its inter dependencies (of i − 1),
/// the admission of iteration i where something could count it down before that admission (a
/// task with inter dependencies, or a globally ordered one), and for a globally ordered task
/// the ordered instance before it in (iteration, rank) order — a chain of edges on *finish*, so
/// turns are handed out in that order and an ordered instance never holds a lane waiting for its
/// turn. Whoever takes the counter to zero releases the instance to its lane. Iterations are
/// admitted whenever a slot is free (back-pressure: at most `slots` in flight).
class DataFlowRelease final : public ReleasePolicy {
 public:
  explicit DataFlowRelease(EngineCore& core);

  [[nodiscard]] int extra_degree(TaskIndex task, std::int64_t iter) const noexcept override;
  // A run starts: it may retire undriven again (see advance).
  void reset() override;
  // Admits what can go: while a slot is free and the source has batches.
  void advance() override;
  [[nodiscard]] bool drained() const noexcept override;
  void ready(Instance& in, bool step_ending) noexcept override;
  void start(Instance& in) noexcept override;
  [[nodiscard]] bool start_proceeds() const noexcept override { return true; }
  [[nodiscard]] bool releases_every_instance() const noexcept override { return true; }
  // With one thread (a pool without workers) an admission's ready instances run at once
  // (RunQueueHooks::RunHere), driving or not.
  [[nodiscard]] bool retires_undriven() const noexcept override;
  void ordered_finished(Instance& in) noexcept override;
  void explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                          bool& waits) const override;

 private:
  // The ordered instance released after (task, iter) finished: (next task, iter) or
  // (first task, iter + 1); and the one before.
  [[nodiscard]] Instance& next_ordered(const Instance& in) const noexcept;

  EngineCore& core_;
  // The runtime's scheduler runs only when driven (see ClockRelease::only_driven_).
  bool only_driven_;
  std::vector<TaskIndex> ordered_;  // globally ordered tasks in intra-topological order
  std::vector<int> rank_;           // per task: its position in ordered_, or -1
  // Per task, how its admission goes (see Admission in data_flow_release.cpp).
  enum class Admission : unsigned char { token, release, none };
  std::vector<Admission> admission_;
  std::vector<TaskIndex> admitted_;  // the tasks whose admission is not `none`, in task order
  // The iteration admitted last ran whole in place (UncountedRuns::run_iteration): the
  // count-downs its instances owe the next one's counters are still to be made, before that
  // one is admitted the general way (UncountedRuns::pay_owed).
  bool next_owed_ = false;
  // Whole iterations may run in place (UncountedRuns::run_iteration): the uncounted fast
  // path is on and every task is in place. Fixed for the pipeline; set by reset().
  bool whole_capable_ = false;
  // With workers that take next to none of its short tasks, the caller runs whole iterations
  // in place for a while (AloneWindow; only where whole iterations run with one thread).
  AloneWindow alone_;
};

}  // namespace swp::detail
