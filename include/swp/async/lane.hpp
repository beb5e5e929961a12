#pragma once
// Lane: the seed's thread group — a FIFO serial executor for task instances.

#include <atomic>
#include <coroutine>
#include <string>
#include <vector>

#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/spin_lock.hpp"
#include "swp/async/resumer.hpp"
#include "swp/async/scheduler.hpp"

namespace swp {

/// Runs jobs one at a time in submission order, also across a job's suspensions: while a
/// job's coroutine waits (for a dependency, its sequencer turn), the lane runs nothing else.
/// That is what makes per-stream submission order deterministic, identical on every rank.
///
/// A lane owns no thread: it runs on its Scheduler (a pool shared by all lanes, or a
/// scheduler with one dedicated thread, e.g. for a CUDA submission thread).
///
/// Completion: a job's `start` runs on the lane; the job calls `finish_job()` (on the lane)
/// when its work is over, and the next job starts. Coroutines started by a job use the lane as
/// their Resumer, so every continuation of the job runs on the lane too.
/// Errors: jobs handle their own; nothing is thrown out of a lane.
///
/// Example:
/// ```
/// swp::ThreadPoolScheduler pool(2);
/// swp::Lane lane(pool, "compute");
/// lane.submit(job);   // job: a swp::Lane::Job whose start() begins a coroutine
/// ```
class Lane final : public Runnable, public Resumer {
 public:
  /// Intrusive unit of work of a lane (a task instance in the engines).
  class Job {
   public:
    /// Begins the job on `lane`'s thread. The job is in progress until it calls
    /// `lane.finish_job()`, from inside `start` or later from a continuation on the lane.
    virtual void start(Lane& lane) noexcept = 0;
    /// Continues the job on `lane` after `lane.continue_job(*this)`: how a job that holds
    /// its lane without a coroutine (it parked itself) goes on. The default does nothing.
    virtual void resume(Lane& lane) noexcept { (void)lane; }
    Job* next_job = nullptr;  ///< queue link, owned by the lane while queued or continued

   protected:
    ~Job() = default;
  };

  Lane(Scheduler& scheduler, std::string name);
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  /// Queues `job` behind every job submitted before it. Any thread.
  void submit(Job& job) noexcept { submit(job, false); }

  /// submit(job) at the very end of a runnable's work (a step of another lane finishing its
  /// job): when this lane is idle, its step may run right after on the same thread, through
  /// the scheduler's bypass (Scheduler::post_next). Nothing may block between this call and
  /// the end of the calling runnable.
  void submit_next(Job& job) noexcept { submit(job, true); }

  /// Continues the current job's coroutine `h` on this lane. Any thread.
  void resume(std::coroutine_handle<> h) noexcept override;

  /// Continues the current job (which started and has not finished) by calling its
  /// `resume(lane)` on this lane, as a step of its own. Any thread.
  void continue_job(Job& job) noexcept;

  /// Ends the current job; the next queued one may start once the current step returns.
  /// Call on the lane, inside the job's start or one of its continuations.
  void finish_job() noexcept {
    // Called inside one of this lane's steps: the step's epilogue, which takes the lock anyway,
    // makes it visible (one lock round trip per job less).
    job_finished_ = true;
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] Scheduler& scheduler() const noexcept { return scheduler_; }

  /// True while no job is queued, running or suspended.
  [[nodiscard]] bool idle() const noexcept;

  /// What the lane's current job is doing, as far as the lane can tell (for hang reports).
  enum class Activity : unsigned char {
    idle,       ///< no job started and unfinished
    running,    ///< a step of the job (its start or a continuation) runs on a thread now
    resumable,  ///< the job is suspended, and a continuation of it is queued on the lane
    suspended,  ///< the job is suspended and nothing has resumed it yet
  };
  /// A snapshot of the current job's activity. Any thread.
  [[nodiscard]] Activity activity() const noexcept;

  /// Runs one step (a continuation or the start of the next job): the Scheduler's entry point.
  void run() noexcept override;

 private:
  void submit(Job& job, bool next) noexcept;
  // Steps one run() takes in a row at most, when nothing else waits to run next on its
  // thread (Scheduler::nothing_next_here); otherwise one.
  static constexpr unsigned max_steps_in_a_row = 4;
  // Takes the next step (a continuation, the job to resume, or the next job); lock_ held.
  void take_step(std::coroutine_handle<>& continuation, Job*& continued, Job*& job) noexcept;
  // Whether a step is pending; call with lock_ held.
  [[nodiscard]] bool has_step() const noexcept {
    return !resumes_.empty() || !continued_.empty() || (!in_job_ && !jobs_.empty());
  }

  Scheduler& scheduler_;
  std::string name_;
  mutable detail::SpinLock lock_;
  detail::IntrusiveFifo<Job, &Job::next_job> jobs_;  // not started yet
  std::vector<std::coroutine_handle<>> resumes_;  // continuations of the current job
  detail::IntrusiveFifo<Job, &Job::next_job> continued_;  // the current job, to resume
  bool in_job_ = false;     // a job started and has not finished
  bool job_finished_ = false;  // finish_job() was called in the running step (its thread only)
  bool scheduled_ = false;  // posted to the scheduler or running a step
  bool stepping_ = false;   // a step runs now (set and cleared under the step's own locks)
  // A job submitted to an idle lane: the lane's next step, handed to it without the queue.
  // Written under the lock by the submitter that schedules the lane; read and cleared by that
  // step without it (release / acquire: plain moves on x86). activity() reads it too, under
  // the lock, while the step may clear it.
  std::atomic<Job*> direct_{nullptr};
};

}  // namespace swp
