#pragma once
// TaskProfiler: per-task exposed time from serial runs with one task shortcut at a time
// (seed 003, class TaskProfiler).

#include <cstdint>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "swp/engine/pipeline.hpp"
#include "swp/tune/profile_result.hpp"

namespace swp {

/// How TaskProfiler::profile measures (seed defaults).
struct ProfileOptions {
  int warmup = 3;   ///< serial iterations run first, unmeasured (num_warmup)
  int measure = 10; ///< serial iterations per timed round (num_measure)
  int rounds = 3;   ///< timed rounds; the median round counts (num_rounds)
  /// Tasks not profiled (e.g. a backward that cannot be skipped on its own). Tasks already
  /// shortcut by the caller are not profiled either: they are skipped in every measurement.
  std::set<std::string> skip_tasks = {};
};

namespace detail {

/// What the profiling algorithm needs from a pipeline; type-erased so that it is compiled once.
struct ProfileTarget {
  std::function<void(std::int64_t iter)> run_iteration;  // one serial iteration
  std::function<void()> synchronize;                     // every stream idle
  std::function<Clock::time_point()> now;                // the runtime's clock
  std::function<void(const std::string& task, bool on)> set_shortcut;
  std::vector<std::string> tasks;  // the serial order
  std::set<std::string> shortcut;  // shortcut by the caller before profiling
};

/// The four phases of the seed: warm-up; baseline = the median over rounds of a round's time
/// per iteration; per task, the same median with that task shortcut (after one untimed
/// caching iteration); exposed = max(0, baseline − that median). Each round is bracketed by
/// exactly two synchronizations. Restores the caller's shortcut state, also on error.
ProfileResult profile_serial(const ProfileTarget& target, const ProfileOptions& options);

}  // namespace detail

/// Measures how much of a serial iteration each task exposes: the serial iteration time
/// minus the serial iteration time with that task shortcut (skipped, its outputs replayed).
/// The results say which tasks are worth overlapping, and feed the tuner
/// (`TuneOptions::measured`, `swp tune --costs`).
///
/// Completion: profile() runs warmup + rounds × measure serial iterations for the baseline and
/// 1 + rounds × measure more per profiled task, all on the calling thread, and returns when
/// the device work is complete. Errors: a failing task surfaces as TaskError, unknown names in
/// skip_tasks and bad counts as std::invalid_argument, a filled pipeline as PipelineStateError.
/// The pipeline's shortcut configuration is restored in every case (profiled tasks' caches
/// are dropped). Times are the runtime's clock: wall time on host, virtual time on sim
/// (where a plan's synthetic costs give exact, closed-form results). Each serial iteration
/// starts once the device work of the one before it completed (Pipeline::run_one_serial_iter:
/// that work may read the context the next one overwrites), so a round measures per
/// iteration its CPU time plus the device work its own later tasks do not hide, the wait
/// counted in the next iteration (the last one's in the round's closing synchronization): a
/// task's device work is exposed in full unless its iteration's CPU hides it, as in a correct
/// training loop, not hidden under the next iteration's CPU.
///
/// Example:
/// ```
/// swp::TaskProfiler profiler(pipe);
/// auto result = profiler.profile(batch, {.warmup = 5, .measure = 20});
/// result.print_report();
/// ```
template <detail::PipelineContext Ctx>
class TaskProfiler {
 public:
  using Batch = typename Ctx::batch_type;

  explicit TaskProfiler(Pipeline<Ctx>& pipe) : pipe_(pipe) {}

  /// Profiles every task on serial iterations of copies of `batch`.
  ProfileResult profile(const Batch& batch, const ProfileOptions& options = {}) {
    detail::ProfileTarget target;
    target.run_iteration = [this, &batch](std::int64_t iter) { pipe_.run_one_serial_iter(batch, iter); };
    target.synchronize = [this] { pipe_.synchronize(); };
    target.now = [this] { return pipe_.runtime().now(); };
    target.set_shortcut = [this](const std::string& task, bool on) {
      if (on) {
        pipe_.enable_shortcut(task);
      } else {
        pipe_.disable_shortcut(task);
      }
    };
    for (TaskIndex t : pipe_.serial_order()) target.tasks.push_back(pipe_.graph().name(t));
    target.shortcut = pipe_.shortcuts();
    return detail::profile_serial(target, options);
  }

  /// profile() for each batch of `batches` (seed profile_many).
  template <std::ranges::input_range R>
  std::vector<ProfileResult> profile_many(const R& batches, const ProfileOptions& options = {}) {
    std::vector<ProfileResult> results;
    for (const auto& batch : batches) results.push_back(profile(batch, options));
    return results;
  }

 private:
  Pipeline<Ctx>& pipe_;
};

template <class Ctx>
TaskProfiler(Pipeline<Ctx>&) -> TaskProfiler<Ctx>;

}  // namespace swp
