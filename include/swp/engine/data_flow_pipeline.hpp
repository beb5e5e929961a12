#pragma once
// DataFlowPipeline: the native engine — an instance fires as soon as its dependencies are done
// and its iteration has a slot (seed DataFlowPipeline).

#include "swp/engine/detail/release_policy.hpp"
#include "swp/engine/pipeline.hpp"

namespace swp {

/// Data-flow engine. No periods: a task instance (task, i) is released to its lane when
/// (1) it was not released yet, (2) iteration i holds a slot — at most `max_depth` iterations
/// are in flight, which is both the buffer capacity and the back-pressure —, (3) its intra
/// dependencies of iteration i and (4) its inter dependencies of iteration i − 1 are done
/// (submitted). The seed's fifth condition, a per-task in-flight count below max_depth, holds
/// by construction here: one instance per (task, iteration) and at most max_depth iterations.
/// Globally ordered instances are released in (iteration, intra-topological rank) order, so
/// every rank issues them alike. Stages are ignored (they matter only to the clock engine).
///
/// Filling bursts: every dependency-free task of the first max_depth iterations fires at
/// once; after each retirement new iterations are admitted and everything unblocked fires.
///
/// Example:
/// ```
/// swp::Runtime rt;
/// swp::DataFlowPipeline<Ctx> pipe(rt, plan, /*max_depth=*/5);
/// pipe.fill_pipeline(loader);
/// while (auto iter = pipe.progress()) { ... }
/// ```
template <detail::PipelineContext Ctx>
class DataFlowPipeline final : public Pipeline<Ctx> {
 public:
  /// A pipeline running `plan`'s bodies, at most `max_depth` iterations in flight.
  /// Throws PlanError for an invalid plan, std::invalid_argument for max_depth < 1 or bodies
  /// that no longer fit the plan's tasks (see Plan::bound_bodies), std::length_error for a plan
  /// of 2^31 tasks or more.
  DataFlowPipeline(Runtime& runtime, const Plan<Ctx>& plan, int max_depth)
      : Pipeline<Ctx>(runtime, plan, &detail::make_data_flow_release, checked(max_depth)) {}

  /// A pipeline running `plan`'s synthetic costs (a plain plan has no bodies).
  DataFlowPipeline(Runtime& runtime, const PipelinePlan& plan, int max_depth)
      : Pipeline<Ctx>(runtime, plan, &detail::make_data_flow_release, checked(max_depth)) {}

  /// A plan whose bodies were bound for another context type does not make a pipeline.
  template <class Other>
  DataFlowPipeline(Runtime&, const Plan<Other>&, int) = delete;

  /// Drains a filled pipeline and waits for running bodies first (see Pipeline).
  ~DataFlowPipeline() override { this->shut_down(); }

  [[deprecated("use depth()")]] [[nodiscard]] int max_depth() const noexcept {
    return this->depth();
  }

 private:
  static std::size_t checked(int max_depth) {
    if (max_depth < 1)
      throw std::invalid_argument("DataFlowPipeline: max_depth must be at least 1, got " +
                                  std::to_string(max_depth));
    return static_cast<std::size_t>(max_depth);
  }
};

}  // namespace swp
