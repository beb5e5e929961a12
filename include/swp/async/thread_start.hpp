#pragma once
// ThreadStart and ThreadStartHook: a say in the threads swp starts (priority, affinity,
// accounting), given on each thread before it runs anything.

#include <functional>
#include <string_view>

namespace swp {

/// What a thread that swp started is for. Every such thread is named after it for `top -H`,
/// `perf` and debuggers: "swp-worker<i>", "swp-lane:<lane>", "swp-stream:<stream>",
/// "swp-timers" (truncated to the 15 characters Linux keeps).
struct ThreadStart {
  enum class Role {
    worker,  ///< a thread of a ThreadPoolScheduler's pool (a Runtime's workers)
    lane,    ///< the thread of a lane a Runtime dedicates one to (RuntimeOptions::dedicated_lanes)
    stream,  ///< the worker thread of a host stream (the host backend's "device")
    timer,   ///< a TimerQueue's thread (a Runtime's deadlines), started on first use
  };
  Role role;
  /// The lane's or the stream's name; empty for a pool worker and the timer thread.
  std::string_view name;
  /// A pool worker's index (0 ..< workers); 0 otherwise.
  unsigned index = 0;
};

/// Called on each thread swp starts, on that thread, after it was named and before it runs
/// any work: set its priority, pin it to a core, register it with a profiler.
/// It must not throw (an exception escaping it ends the process, as from any thread's body),
/// and it should return promptly: the thread's work waits for it. The `name` it is given is
/// valid only during the call.
///
/// Example (a service whose host streams stand in for a GPU, which the io threads should not
/// preempt; a negative nice value needs CAP_SYS_NICE):
/// ```
/// swp::RuntimeOptions options{.on_thread_start = [](const swp::ThreadStart& t) {
///   if (t.role == swp::ThreadStart::Role::stream)
///     setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), -5);
/// }};
/// ```
using ThreadStartHook = std::function<void(const ThreadStart&)>;

/// Names the calling thread after `start` (see ThreadStart), then calls `hook` (if any) with
/// it: what every thread swp starts does first. For schedulers and devices written outside swp.
void begin_thread(const ThreadStart& start, const ThreadStartHook& hook) noexcept;

}  // namespace swp
