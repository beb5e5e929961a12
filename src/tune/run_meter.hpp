#pragma once
// RunMeter: the steady-state measurement of a synthetic run, streamed while it runs, in
// memory that depends on the plan and not on the number of iterations (private to src/tune).

#include <cstdint>
#include <mutex>
#include <vector>

#include "swp/core/plan_graph.hpp"
#include "swp/engine/run_observer.hpp"
#include "swp/engine/run_stats.hpp"
#include "swp/tune/synthetic_run.hpp"

namespace swp::detail {

/// The iterations a steady state is measured over: `first..last`, both included. The fill
/// (the first `slots` iterations, and the completion of the one after them, where the
/// measurement starts) and the drain (the last `slots`) are left out. Empty (`last < first`)
/// when the run is too short for that: fewer than `min_steady_iters(slots)` iterations.
struct SteadyWindow {
  std::int64_t first = 0;
  std::int64_t last = -1;

  [[nodiscard]] bool empty() const noexcept { return last < first; }
  [[nodiscard]] std::int64_t size() const noexcept { return empty() ? 0 : last - first + 1; }
  [[nodiscard]] bool contains(std::int64_t iter) const noexcept {
    return iter >= first && iter <= last;
  }
};

/// The steady-state window of a run of `iters` iterations with up to `slots` in flight.
[[nodiscard]] SteadyWindow steady_window(std::int64_t iters, int slots) noexcept;

/// The synthetic work of iterations `window` on the busiest stream or lane of `graph`, and
/// which one that is. Durations are converted exactly as the engines convert costs, so on
/// sim a resource really spends `work` on those iterations.
struct BusiestResource {
  Clock::duration work{};
  bool is_stream = true;
  std::size_t index = 0;  ///< into RunMeter's streams or lanes
};

/// Watches a synthetic run of `iters` iterations with up to `slots` in flight and keeps only
/// running extremes, whatever the number of iterations:
/// - completion: an iteration completes at the later of its retirement and the end of its
///   last device work; kept are when the iterations before the steady window, and those up
///   to its end, had all completed;
/// - for each stream (and, when `track_lanes`, each lane): the first start and the last end
///   of the work of the measured iterations on it (the steady window's, or every iteration's
///   when the run is too short for one).
/// Everything it sees is passed on to `next` (the run's own observer), if any.
/// Thread-safe: device work arrives from stream threads on host.
class RunMeter final : public TaskObserver, public DeviceObserver {
 public:
  RunMeter(const PlanGraph& graph, std::int64_t iters, int slots, Runtime& runtime,
           bool track_lanes, RunObserver* next);

  /// Iteration `iter` retired at `at` (called on the caller's thread).
  void retired(std::int64_t iter, Clock::time_point at);

  struct Result {
    bool steady_state = false;
    double us_per_iter = 0;
    double bound_us_per_iter = 0;
    double efficiency = 0;
  };
  /// The measurement after the run: over the steady window when there is one, else over the
  /// whole run (`stats.elapsed` per iteration).
  [[nodiscard]] Result result(const RunStats& stats) const;

  void device_work(const Stream& stream, const DeviceWork& work) noexcept override;
  void task_released(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept override;
  void task_waiting(TaskIndex task, std::int64_t iter, const Lane& lane,
                    const TaskWait& wait) noexcept override;
  void task_started(TaskIndex task, std::int64_t iter, const Lane& lane) noexcept override;
  void task_finished(TaskIndex task, std::int64_t iter, const Lane& lane,
                     bool ok) noexcept override;

 private:
  struct Span {
    Clock::time_point first = Clock::time_point::max();
    Clock::time_point last = Clock::time_point::min();
    void cover(Clock::time_point from, Clock::time_point to) noexcept;
  };

  void completed(std::int64_t iter, Clock::time_point at) noexcept;  // under mutex_
  [[nodiscard]] BusiestResource busiest() const;

  const PlanGraph& graph_;
  SteadyWindow window_;    // the steady state's iterations; empty for a short run
  SteadyWindow measured_;  // the iterations whose work is measured: window_, or all
  Runtime& runtime_;
  bool track_lanes_;
  RunObserver* next_;
  std::vector<std::size_t> stream_of_, lane_of_;  // by task
  std::size_t streams_ = 0, lanes_ = 0;

  mutable std::mutex mutex_;
  Clock::time_point before_ = Clock::time_point::min();   // iterations < first all completed
  Clock::time_point through_ = Clock::time_point::min();  // iterations <= last all completed
  std::vector<Span> stream_spans_, lane_spans_;
};

}  // namespace swp::detail
