#pragma once
// TeardownThreads: threads of their own for work that must not run on the thread that asks for
// it (a loader dropped on one of its own threads), joined before the process's static objects
// are destroyed, so none of that work outlives main().

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace swp::io::detail {

/// Runs each job on a thread of its own, and joins it: close() (and the destructor) joins every
/// thread still running, and start() joins those that finished before it starts another.
///
/// The process-wide one, process(), is closed at static destruction, before every static object
/// constructed before its first use (the C++ runtime's, the CUDA runtime's, the backends'
/// registries: what a loader's teardown uses), so a teardown never runs past that point.
/// Thread-safe.
class TeardownThreads {
 public:
  TeardownThreads() = default;
  TeardownThreads(const TeardownThreads&) = delete;
  TeardownThreads& operator=(const TeardownThreads&) = delete;
  /// close().
  ~TeardownThreads();

  /// Runs `job` on a new thread (it must not throw). Throws std::logic_error once closed, or
  /// std::system_error when no thread can be started; `job` did not run then.
  void start(std::function<void()> job);
  /// Refuses new jobs and waits for every job started to finish (their threads joined). Not
  /// from a job's own thread.
  void close() noexcept;
  /// Jobs started and not finished yet (for tests: stale as soon as it returns).
  [[nodiscard]] std::size_t running() const noexcept;

  /// The process's: never destroyed (a loader dropped during static destruction still finds
  /// it, closed), closed at static destruction as above. Created at its first call.
  static TeardownThreads& process();

 private:
  struct Job {
    std::atomic<bool> done{false};  // set by the job's thread last; join() then waits its exit
    std::thread thread;
  };
  void join_finished_locked();

  std::mutex mutex_;
  bool closed_ = false;
  std::atomic<std::size_t> running_{0};
  std::list<Job> jobs_;  // a list: each thread holds its Job's address
};

}  // namespace swp::io::detail
