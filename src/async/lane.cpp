#include "swp/async/lane.hpp"

#include <mutex>

namespace swp {

Lane::Lane(Scheduler& scheduler, std::string name)
    : scheduler_(scheduler), name_(std::move(name)) {
  resumes_.reserve(4);
}

void Lane::submit(Job& job) noexcept {
  bool post = false;
  {
    std::lock_guard guard(lock_);
    jobs_.push(job);
    if (!scheduled_ && !in_job_) post = scheduled_ = true;
  }
  if (post) scheduler_.post(*this);
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

void Lane::finish_job() noexcept {
  std::lock_guard guard(lock_);
  in_job_ = false;
}

bool Lane::idle() const noexcept {
  std::lock_guard guard(lock_);
  return !in_job_ && jobs_.empty() && resumes_.empty();
}

void Lane::run() noexcept {
  std::coroutine_handle<> continuation;
  Job* job = nullptr;
  {
    std::lock_guard guard(lock_);
    if (!resumes_.empty()) {
      continuation = resumes_.front();
      resumes_.erase(resumes_.begin());
    } else if (!in_job_ && !jobs_.empty()) {
      job = jobs_.pop();
      in_job_ = true;
    }
  }
  // One step per run(): between steps the scheduler may hand this thread's next slot to other
  // lanes, so a lane with a long queue cannot starve the lanes its jobs just woke.
  if (continuation) {
    continuation.resume();
  } else if (job != nullptr) {
    job->start(*this);
  }
  bool again = false;
  {
    std::lock_guard guard(lock_);
    again = has_step();
    scheduled_ = again;
  }
  if (again) scheduler_.post(*this);
}

}  // namespace swp
