#include "swp/async/lane.hpp"

#include <mutex>

#include "swp/async/detail/asymmetric_fence.hpp"

namespace swp {

Lane::Lane(Scheduler& scheduler, std::string name)
    : scheduler_(scheduler),
      hooks_(detail::run_queue_hooks_of(scheduler)),
      name_(std::move(name)) {
  resumes_.reserve(4);
}

void Lane::submit(Job& job, bool next) noexcept {
  {
    std::lock_guard guard(lock_);
    if (claim_ != nullptr) [[unlikely]] {
      if (!submit_to_claimed(job)) return;
      next = false;  // the job queued; the step that starts it is not the caller's successor
    } else if (scheduled_ || in_job_) {
      jobs_.push(job);
      return;
    } else {
      // Idle: this job is the lane's next step, and nothing can come before it (a
      // continuation needs a started job; later jobs queue behind it, seeing the lane
      // scheduled). The step takes it without the lock: its state is set here, as the step's
      // prologue would.
      direct_.store(&job, std::memory_order_release);
      in_job_ = true;
      stepping_ = true;
      scheduled_ = true;
    }
  }
  if (next) {
    scheduler_.post_next(*this);
  } else {
    scheduler_.post(*this);
  }
}

bool Lane::submit_to_claimed(Job& job) noexcept {
  jobs_.push(job);
  if (holder_.load(std::memory_order_relaxed) == nullptr) return false;  // revoked already
  holder_.store(nullptr, std::memory_order_relaxed);
  // The store-buffering pattern with the owner: it stores that its job holds the lane, then
  // loads holder_; this stores holder_, then asks the owner. Either the owner sees the
  // revocation (and ends the claim itself at that release or finish), or this sees its job.
  // The lock stays held: the owner cannot end the claim, and with it go, meanwhile.
  detail::heavy_fence();
  if (claim_->holds_lane()) return false;  // its job's end ends the claim
  return end_claim_locked();
}

bool Lane::end_claim_locked() noexcept {
  claim_ = nullptr;
  holder_.store(nullptr, std::memory_order_relaxed);
  in_job_ = false;  // the claim's hold
  if (scheduled_ || !has_step()) return false;
  scheduled_ = true;
  return true;
}

bool Lane::try_claim(const Claim& owner) noexcept {
  if (!detail::asymmetric_fences_available()) return false;
  std::lock_guard guard(lock_);
  if (claim_ != nullptr || in_job_ || scheduled_ || has_step()) return false;
  claim_ = &owner;
  holder_.store(&owner, std::memory_order_relaxed);
  in_job_ = true;
  return true;
}

void Lane::end_claim(const Claim& owner) noexcept {
  bool post = false;
  {
    std::lock_guard guard(lock_);
    // A job of the owner's still holding the lane ends the claim itself (see Claim).
    if (claim_ == &owner && !owner.holds_lane()) post = end_claim_locked();
  }
  if (post) scheduler_.post(*this);
}

bool Lane::claimed_by(const Claim& owner) const noexcept {
  std::lock_guard guard(lock_);
  return claim_ == &owner;
}

void Lane::resume(std::coroutine_handle<> h) noexcept {
  bool post = false;
  {
    std::lock_guard guard(lock_);
    resumes_.push_back(h);
    if (!scheduled_) post = scheduled_ = true;
  }
  if (post) scheduler_.post(*this);
}

void Lane::continue_job(Job& job) noexcept {
  bool post = false;
  {
    std::lock_guard guard(lock_);
    continued_.push(job);
    if (!scheduled_) post = scheduled_ = true;
  }
  if (post) scheduler_.post(*this);
}

bool Lane::idle() const noexcept {
  std::lock_guard guard(lock_);
  return !in_job_ && jobs_.empty() && resumes_.empty() && continued_.empty();
}

Lane::Activity Lane::activity() const noexcept {
  std::lock_guard guard(lock_);
  // A job handed to the lane directly counts as started once its step took it.
  if (!in_job_ || direct_.load(std::memory_order_relaxed) != nullptr) return Activity::idle;
  if (stepping_) return Activity::running;
  return resumes_.empty() && continued_.empty() ? Activity::suspended : Activity::resumable;
}

void Lane::take_step(std::coroutine_handle<>& continuation, Job*& continued, Job*& job) noexcept {
  if (!resumes_.empty()) {
    continuation = resumes_.front();
    resumes_.erase(resumes_.begin());
  } else if (!continued_.empty()) {
    continued = continued_.pop();
  } else if (!in_job_ && !jobs_.empty()) {
    job = jobs_.pop();
    in_job_ = true;
  }
}

void Lane::run() noexcept {
  std::coroutine_handle<> continuation;
  // acquire: pairs with the submitter's release store, so the job and the lane's state the
  // submitter set are visible here without the lock (plain moves on x86).
  Job* job = direct_.load(std::memory_order_acquire);
  Job* continued = nullptr;
  if (job != nullptr) {
    direct_.store(nullptr, std::memory_order_relaxed);  // no RMW: only this step clears it
  } else {
    std::lock_guard guard(lock_);
    take_step(continuation, continued, job);
    stepping_ = true;
  }
  for (unsigned steps = 1;; ++steps) {
    if (continuation) {
      continuation.resume();
    } else if (continued != nullptr) {
      continued->resume(*this);
    } else if (job != nullptr) {
      job->start(*this);
    }
    bool again = false;
    bool next_here = false;
    {
      std::lock_guard guard(lock_);
      if (job_finished_) {
        job_finished_ = false;
        in_job_ = false;
      }
      again = has_step();
      // Mostly one step per run(): between steps the scheduler may hand this thread's next
      // slot to other lanes, so a lane with a long queue cannot starve the lanes its jobs just
      // woke. When the step woke nothing that runs next on this thread, up to
      // max_steps_in_a_row steps follow at once, taken under this same lock: a lane that has
      // fallen behind (a clock pipeline's fill queues several jobs on each lane) catches up
      // instead of re-posting itself, and being taken again, for every job.
      if (again && steps < max_steps_in_a_row && hooks_.nothing_next_here()) {
        continuation = {};
        continued = nullptr;
        job = nullptr;
        take_step(continuation, continued, job);
        next_here = true;  // still scheduled, still stepping
      } else {
        scheduled_ = again;
        stepping_ = false;
      }
    }
    if (!next_here) {
      if (again) scheduler_.post(*this);
      return;
    }
  }
}

}  // namespace swp
