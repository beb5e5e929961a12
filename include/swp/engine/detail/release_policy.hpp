#pragma once
// ReleasePolicy: when the engine core releases a task instance to its lane — the one thing the
// data-flow and the clock engines do differently (DESIGN.md decision 1). The policies are
// DataFlowRelease and ClockRelease; each owns the state only it needs.

#include <cstdint>
#include <iosfwd>
#include <memory>

#include "swp/core/plan_graph.hpp"

namespace swp::detail {

class EngineCore;
struct Instance;

/// What the core asks its release policy. The core calls the hot hooks (`ready`, `start`,
/// `ordered_finished`) once per instance on whichever thread gets there, the rest on the thread
/// that drives the pipeline.
class ReleasePolicy {
 public:
  /// Makes the policy of `core` (called once the core knows its tasks, lanes and streams).
  using Make = std::unique_ptr<ReleasePolicy> (*)(EngineCore& core);

  virtual ~ReleasePolicy() = default;

  /// What the join counter of `task` counts in iteration `iter` besides its dependencies.
  [[nodiscard]] virtual int extra_degree(TaskIndex task, std::int64_t iter) const noexcept = 0;
  /// A new run starts (its first iteration is the core's base_): forget the last one.
  virtual void reset() = 0;
  /// Lets in what can go now: new iterations while there is room and the source has batches
  /// (an admission the source answers "not yet" leaves EngineCore::starved_ set), and for the
  /// clock the periods that may open. Called when a run starts or continues, after every
  /// retirement, and when a source the core starved on has its answer.
  virtual void advance() = 0;
  /// Every instance released so far of the iterations in flight finished.
  [[nodiscard]] virtual bool drained() const noexcept = 0;
  /// The join counter of `in` reached zero: everything it waits for happened. `step_ending`:
  /// on a lane step that ends right after (a producer's finish), so the instance's lane may
  /// run next on this thread (Lane::submit_next).
  virtual void ready(Instance& in, bool step_ending) noexcept = 0;
  /// Its lane starts `in`: it proceeds now (EngineCore::proceed) or, when its dependencies
  /// are not done yet, holds the lane until the last of them continues it.
  virtual void start(Instance& in) noexcept = 0;
  /// Whether `start` is just EngineCore::proceed and `ready` just EngineCore::release_now (the
  /// core then calls those directly).
  [[nodiscard]] virtual bool start_proceeds() const noexcept { return false; }
  /// Whether a retirement that needs no wait may run without a driving section where the
  /// calling thread runs none of the scheduler's work (RunQueueHooks::runs_no_work_here): what
  /// advance() then makes ready it runs at once or posts to the scheduler's shared queue.
  [[nodiscard]] virtual bool retires_undriven() const noexcept { return false; }
  /// Whether every instance of an admitted iteration is released sooner or later, failures
  /// included (after release_rest on a stopped run). Then an iteration's completion needs
  /// counting only at its sinks (see IterationSync::remaining); otherwise every instance
  /// counts, so a drain can tell the released ones finished.
  [[nodiscard]] virtual bool releases_every_instance() const noexcept { return false; }
  /// The run stopped (failed, cancelled, timed out) and no more iterations are admitted:
  /// release every instance of the iterations in flight that is not released yet, so each
  /// finishes (cancelled, without its body) and the drain sees every iteration complete.
  /// Called on the driving thread before it waits for the drain.
  virtual void release_rest() {}
  /// The globally ordered instance `in` finished.
  virtual void ordered_finished(Instance& in) noexcept = 0;
  /// For the hang report: what else an instance not released yet waits for (appended to
  /// `out`; `waits` tells whether a dependency was named already and is set when this names one).
  virtual void explain_unreleased(std::ostream& out, TaskIndex task, std::int64_t iter,
                                  bool& waits) const = 0;
};

/// The data-flow engine's policy (DataFlowRelease) and the clock engine's (ClockRelease), made
/// for `core`: what DataFlowPipeline and ClockPipeline give their Pipeline to make its core
/// with, without including either policy's header.
std::unique_ptr<ReleasePolicy> make_data_flow_release(EngineCore& core);
std::unique_ptr<ReleasePolicy> make_clock_release(EngineCore& core);

}  // namespace swp::detail
