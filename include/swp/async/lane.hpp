#pragma once
// Lane: the seed's thread group — a FIFO serial executor for task instances.

#include <atomic>
#include <coroutine>
#include <string>
#include <vector>

#include "swp/async/detail/intrusive_fifo.hpp"
#include "swp/async/detail/run_queue_hooks.hpp"
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
/// Claims (for engines): an owner whose jobs on a lane form one serial chain of its own (each
/// starts after the one before finished; it may release the next before that) may claim the
/// lane and run those jobs without it: as runnables on its scheduler, a
/// coroutine's continuations still on the lane. The claim holds the lane like a job that
/// never ends, so nothing else starts meanwhile. A submit() from anyone else revokes it: when
/// the owner holds the lane at that moment (Claim::holds_lane), the owner ends the claim at
/// its job's end (the last one's, when it released several); otherwise the submitter ends it
/// at once. The owner looks for a revocation
/// with a plain load at each release and each finish (claim_holds, after light_fence), the
/// revoking submitter pays a heavy fence (see detail/asymmetric_fence.hpp).
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

  /// The owner of a claim, asked by a revoking submitter whether one of its jobs holds the
  /// lane now: released (the owner stored that with release order, then light_fence(), then
  /// looked at claim_holds()) and not finished (stored with release order likewise).
  class Claim {
   public:
    [[nodiscard]] virtual bool holds_lane() const noexcept = 0;

   protected:
    ~Claim() = default;
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

  /// Claims the lane for `owner` when it is idle and unclaimed, and heavy fences are available
  /// (detail::asymmetric_fences_available); false otherwise. Any thread. The owner must end the
  /// claim (end_claim) before it is destroyed.
  [[nodiscard]] bool try_claim(const Claim& owner) noexcept;
  /// Ends `owner`'s claim, if it still has one (a revoking submitter may have ended it) and
  /// none of its jobs holds the lane (asked under the lane's lock: the job's end must end it
  /// then): jobs queued meanwhile start. Any thread.
  void end_claim(const Claim& owner) noexcept;
  /// Whether `owner`'s claim stands: false once someone else submitted (the owner then ends
  /// it, and runs its jobs through submit()). A relaxed load: the owner calls it after
  /// detail::light_fence(), at each release and finish.
  [[nodiscard]] bool claim_holds(const Claim& owner) const noexcept {
    return holder_.load(std::memory_order_relaxed) == &owner;
  }
  /// Whether `owner` has a claim on the lane, revoked or not, that it did not end yet.
  [[nodiscard]] bool claimed_by(const Claim& owner) const noexcept;

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
  // A submit() to a claimed lane: queues `job`, revokes the claim and ends it when its owner
  // does not hold the lane; true when the lane must be posted. lock_ held.
  bool submit_to_claimed(Job& job) noexcept;
  // Ends the claim; true when the lane must be posted (jobs were queued). lock_ held.
  bool end_claim_locked() noexcept;
  // Steps one run() takes in a row at most, when nothing else waits to run next on its
  // thread (RunQueueHooks::nothing_next_here); otherwise one.
  static constexpr unsigned max_steps_in_a_row = 4;
  // Takes the next step (a continuation, the job to resume, or the next job); lock_ held.
  void take_step(std::coroutine_handle<>& continuation, Job*& continued, Job*& job) noexcept;
  // Whether a step is pending; call with lock_ held.
  [[nodiscard]] bool has_step() const noexcept {
    return !resumes_.empty() || !continued_.empty() || (!in_job_ && !jobs_.empty());
  }

  Scheduler& scheduler_;
  // The scheduler's run-queue capability, asked once (the plain hooks where it has none).
  const detail::RunQueueHooks& hooks_;
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
  // The claim holding the lane (in_job_ is set for it meanwhile), or nullptr. Under the lock.
  const Claim* claim_ = nullptr;
  // claim_ while nobody else submitted, else nullptr (see claim_holds). Written under the
  // lock; read by the owner without it. Not cleared by the end of a claim, and compared with
  // the owner rather than read as a flag: an owner that missed the end of its revoked claim
  // must not take a later claim of someone else for its own.
  std::atomic<const Claim*> holder_{nullptr};
};

}  // namespace swp
