#pragma once
// TaskScope: what a running task instance knows about itself.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "swp/core/plan_graph.hpp"
#include "swp/device/stream.hpp"
#include "swp/device/work_tag.hpp"
#include "swp/engine/detail/engine_handle.hpp"
#include "swp/engine/detail/instance.hpp"
#include "swp/engine/runtime.hpp"

namespace swp {

/// Handed to task bodies that take a second parameter: the instance's identity, its stream
/// and its runtime.
///
/// Example:
/// ```
/// plan.add("Forward", [](Ctx& ctx, swp::TaskScope& task) -> swp::Co<void> {
///   co_await task.cpu_work(5us);       // CPU time spent preparing the launch
///   task.device_work(1ms);             // synthetic device work on the task's stream
/// });
/// ```
class TaskScope {
 public:
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

  [[nodiscard]] const std::string& name() const {
    return detail::graph_of(instance_.core()).name(instance_.task());
  }
  [[nodiscard]] TaskIndex task() const noexcept { return instance_.task(); }
  [[nodiscard]] std::int64_t iter() const noexcept { return instance_.iter(); }

  /// The task's stream. Using it marks the instance as having queued device work, so its
  /// consumers on other streams wait for an event recorded after it.
  [[nodiscard]] Stream& stream() noexcept {
    instance_.stream_used = true;
    return instance_.stream();
  }

  /// Queues synthetic device work of `duration` on the task's stream.
  void device_work(Clock::duration duration) {
    stream().enqueue_work(duration, work_tag(instance_.task(), instance_.iter()));
  }

  /// Queues `work` on the task's stream (see Stream::enqueue: the stream's thread on host,
  /// `modelled` device time on sim), tagged with this instance. Consumers on other streams
  /// wait for it, as for device_work.
  /// Errors: an exception `work` throws is this task's failure in this iteration — a TaskError
  /// naming both, as from a throwing body — reported where the engine looks at the iteration's
  /// device work: with retire_after_device, before the iteration retires (it does not retire as
  /// a success: under FailurePolicy::skip it retires failed, else the run fails; a serial
  /// iteration does not retire, and its run_serial / run_one_serial_iter throws); otherwise as
  /// its context slot is released or reused, failing the run (it may have retired already),
  /// or, when the run ended before its device work completed, from the end of run() /
  /// run_serial() or the pipeline's synchronize(). The stream's own synchronize() does not
  /// throw it.
  void enqueue(std::function<void()> work, Clock::duration modelled = {}) {
    Stream& on = stream();
    on.enqueue(detail::guard_host_work(instance_.core(), instance_.task(), instance_.iter(),
                                       std::move(work)),
               modelled, work_tag(instance_.task(), instance_.iter()));
  }

  /// A pause of `duration` that holds no thread and ends early, throwing swp::Cancelled,
  /// when the run is cancelled or fails (Runtime::sleep_for): a task that waits for time.
  [[nodiscard]] Runtime::Sleep sleep_for(Clock::duration duration) const {
    return runtime().sleep_for(duration);
  }
  /// CPU time spent in the task (spin on host, virtual time on sim).
  [[nodiscard]] Runtime::CpuWork cpu_work(Clock::duration duration) const {
    return runtime().cpu_work(duration);
  }

  [[nodiscard]] Runtime& runtime() const noexcept { return detail::runtime_of(instance_.core()); }

  /// The tag the device work of (task, iter) carries to stream observers (traces, `swp run`).
  static constexpr WorkTag work_tag(TaskIndex task, std::int64_t iter) noexcept {
    return WorkTag{.task = static_cast<std::uint64_t>(task), .iter = iter};
  }

 private:
  // Made once per instance by the engine core, which owns the instance. Only the instance is
  // held (a pipeline has one scope per task and context slot): the graph and the runtime are
  // its core's, read through detail/engine_handle.hpp without the core's definition.
  friend class detail::EngineCore;
  explicit TaskScope(detail::Instance& instance) noexcept : instance_(instance) {}

  detail::Instance& instance_;
};

// Here, where TaskScope is complete (instance.hpp only declares it).
inline TaskScope& detail::Instance::scope() const noexcept { return sync->scopes[task()]; }

}  // namespace swp
