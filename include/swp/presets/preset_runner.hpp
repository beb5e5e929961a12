#pragma once
// PresetRunner: drives a preset's phases and callbacks on any engine.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "swp/presets/preset.hpp"

namespace swp::presets {

/// Runs a preset on pipelines made by `make(plan)`, where `plan` is a phase's plan: a
/// `swp::Plan<Ctx>` for a preset made with bindings, e.g.
/// `[&](const swp::Plan<Ctx>& p) { return std::make_unique<swp::ClockPipeline<Ctx>>(rt, p); }`,
/// or a PipelinePlan for an unbound one (synthetic costs) —
/// one pipeline per phase, and calls the preset's hooks on the driving thread:
/// a phase's `on_enter` before its first batch (PT2's compile step), `on_filled` once each
/// fill has retired its first iteration (StagedTrainPipeline's fill callbacks),
/// `on_data_exhausted` once the source first comes back empty.
///
/// It is written against the engines' public face only (`fill_pipeline`, `progress`, `drain`,
/// `runtime().stream(name).synchronize()`, `Batch`), so the presets layer keeps depending on the
/// plan model alone. Between phases the finished pipeline drains and its streams are
/// synchronized: the next phase's plan cannot name the previous one's tasks as dependencies.
///
/// Completion: `progress()` returns the run-wide index of the iteration that retired (counting
/// across phases; a task's `ctx.iter_idx` counts from 0 in each phase), or empty at end of
/// data or once a requested flush drained everything. Errors: whatever the engine's
/// progress() throws (TaskError, PipelineTimeout) propagates; std::logic_error for progress()
/// before fill_pipeline().
///
/// Ownership: the runner keeps its own copy of the preset (a temporary is moved in, so
/// `PresetRunner runner(make_preset("base", tasks), make)` is fine), and its hooks; changes to
/// the caller's preset after construction do not reach it. What the preset's bodies and hooks
/// capture by reference must outlive the runner, as always. The runner is neither copied nor
/// moved: the pipelines it fills call back into it.
///
/// Example:
/// ```
/// auto preset = swp::presets::make_preset("semi_sync", tasks, {.start_batch = 100});
/// swp::presets::PresetRunner runner(preset, make_clock);
/// runner.fill_pipeline(loader);
/// while (auto iter = runner.progress()) { ... }
/// ```
template <class MakePipeline, class P = PipelinePlan>
class PresetRunner {
  using PipePtr = std::invoke_result_t<MakePipeline&, const P&>;
  using Pipe = typename std::pointer_traits<PipePtr>::element_type;

 public:
  using Batch = typename Pipe::Batch;
  using Source = std::function<std::optional<Batch>()>;

  /// Takes `preset` by value (see Ownership above). Throws std::invalid_argument for a preset
  /// without phases.
  PresetRunner(BasicPreset<P> preset, MakePipeline make)
      : preset_(std::move(preset)), make_(std::move(make)), pipes_(preset_.phases.size()) {
    if (preset_.phases.empty())
      throw std::invalid_argument("preset '" + preset_.name + "' has no phase to run");
  }
  PresetRunner(const PresetRunner&) = delete;
  PresetRunner& operator=(const PresetRunner&) = delete;

  /// Starts a run over `source`, a callable returning std::optional<Batch> (empty: end of
  /// data), at the first phase.
  template <class S>
  void fill_pipeline(S source) {
    if (active_) pipe().drain();
    source_ = Source(std::move(source));
    phase_ = 0;
    offset_ = 0;
    taken_in_phase_ = 0;
    exhausted_ = exhausted_notified_ = false;
    entered_ = false;
    start_fill();
  }

  /// Retires the next iteration; see the class comment.
  std::optional<std::int64_t> progress() {
    if (!source_) throw std::logic_error("PresetRunner::progress() before fill_pipeline()");
    for (;;) {
      if (!active_) {
        if (flush_ || exhausted_) return std::nullopt;
        start_fill();  // a flush was lifted: refill the same phase
      }
      const auto iter = pipe().progress();
      notify_exhausted();
      if (iter) {
        if (!filled_notified_ && preset_.on_filled) preset_.on_filled();
        filled_notified_ = true;
        return offset_ + (iter->iter() - fill_base_);  // the pipeline numbers on across fills
      }
      finish_fill();
      if (flush_) {
        if (on_flushed_) on_flushed_();
        return std::nullopt;
      }
      if (exhausted_ || phase_ + 1 >= preset_.phases.size()) return std::nullopt;
      synchronize(preset_.phases[phase_].plan);
      ++phase_;
      taken_in_phase_ = 0;
      entered_ = false;
      start_fill();
    }
  }

  /// TorchRec `set_flush`: while set, no new batch is taken; once everything in flight
  /// retired, progress() calls `on_flushed` and returns empty. Clearing it lets the next
  /// progress() refill the pipeline and go on with the same source.
  void set_flush(bool flush, std::function<void()> on_flushed = {}) {
    flush_ = flush;
    if (on_flushed) on_flushed_ = std::move(on_flushed);
  }

  /// fill_pipeline + progress until end of data; returns the number of iterations.
  template <class S>
  std::int64_t run(S source) {
    fill_pipeline(std::move(source));
    std::int64_t n = 0;
    while (progress()) ++n;
    synchronize(preset_.phases[phase_].plan);
    return n;
  }

  /// The phase now running.
  [[nodiscard]] const BasicPresetPhase<P>& phase() const { return preset_.phases[phase_]; }
  /// The pipeline of phase `index`, once that phase has started (else nullptr).
  [[nodiscard]] Pipe* pipeline(std::size_t index) const { return pipes_.at(index).get(); }

 private:
  Pipe& pipe() { return *pipes_[phase_]; }

  void start_fill() {
    const BasicPresetPhase<P>& ph = preset_.phases[phase_];
    if (!entered_ && ph.on_enter) ph.on_enter();
    entered_ = true;
    if (!pipes_[phase_]) pipes_[phase_] = make_(ph.plan);
    filled_notified_ = false;
    taken_in_fill_ = 0;
    active_ = true;
    fill_base_ = pipe().next_iteration();
    pipe().fill_pipeline([this] { return next_batch(); });
  }

  void finish_fill() {
    pipe().drain();  // ends the fill so the pipeline can be filled again
    offset_ += taken_in_fill_;
    active_ = false;
  }

  // Called by the engine when it admits an iteration. User callbacks are not run here (this
  // may be any thread the engine admits on); progress() runs them.
  std::optional<Batch> next_batch() {
    const auto& budget = preset_.phases[phase_].batches;
    const bool last = phase_ + 1 == preset_.phases.size();
    if (flush_ || exhausted_ || (!last && budget && taken_in_phase_ >= *budget)) return std::nullopt;
    auto batch = source_();
    if (!batch) {
      exhausted_ = true;
      return std::nullopt;
    }
    ++taken_in_phase_;
    ++taken_in_fill_;
    return batch;
  }

  void notify_exhausted() {
    if (exhausted_ && !exhausted_notified_ && preset_.on_data_exhausted)
      preset_.on_data_exhausted();
    exhausted_notified_ = exhausted_notified_ || exhausted_;
  }

  void synchronize(const P& plan) {
    if (!pipes_[phase_]) return;
    for (const auto& t : plan.tasks)
      pipe().runtime().stream(plan.device_stream(t.schedule.stream)).synchronize();
  }

  // Owned (a reference to the caller's dangled when it was a temporary). Declared first: the
  // pipelines in pipes_ were made from its plans.
  const BasicPreset<P> preset_;
  MakePipeline make_;
  std::vector<PipePtr> pipes_;
  Source source_;
  std::function<void()> on_flushed_;
  std::size_t phase_ = 0;
  std::int64_t offset_ = 0, taken_in_phase_ = 0, taken_in_fill_ = 0;
  std::int64_t fill_base_ = 0;  // the pipeline's first iteration of this fill
  bool active_ = false, flush_ = false, exhausted_ = false, exhausted_notified_ = false;
  bool filled_notified_ = false, entered_ = false;
};

}  // namespace swp::presets
