#include "swp/io/detail/teardown_threads.hpp"

#include <stdexcept>
#include <utility>

namespace swp::io::detail {

TeardownThreads::~TeardownThreads() { close(); }

void TeardownThreads::start(std::function<void()> job) {
  const std::lock_guard lock(mutex_);
  if (closed_) throw std::logic_error("teardown threads: closed (the process is exiting)");
  join_finished_locked();
  Job& slot = jobs_.emplace_back();
  running_.fetch_add(1, std::memory_order_relaxed);
  try {
    slot.thread = std::thread([this, &slot, job = std::move(job)] {
      job();
      running_.fetch_sub(1, std::memory_order_relaxed);
      // Release: what the job did happens before the join of whoever sees it done. Nothing of
      // *this is touched after it (close() may return and the owner go once it is joined).
      slot.done.store(true, std::memory_order_release);
    });
  } catch (...) {
    running_.fetch_sub(1, std::memory_order_relaxed);
    jobs_.pop_back();
    throw;
  }
}

void TeardownThreads::join_finished_locked() {
  // A finished job's thread only has its exit left: joining it waits for no job.
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->done.load(std::memory_order_acquire)) {
      it->thread.join();
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

void TeardownThreads::close() noexcept {
  std::list<Job> jobs;
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    jobs.splice(jobs.end(), jobs_);  // the nodes move: the threads' Job addresses stay valid
  }
  // Joined without the lock: a job may start() (refused now).
  for (Job& job : jobs) job.thread.join();
}

std::size_t TeardownThreads::running() const noexcept {
  return running_.load(std::memory_order_relaxed);
}

TeardownThreads& TeardownThreads::process() {
  // Never destroyed, so that a start() during static destruction finds it (closed: refused).
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory)
  static TeardownThreads* const threads = new TeardownThreads;
  // Static destruction runs in the reverse order of construction: this closer, constructed at
  // the first call, runs before the destructors of every static object constructed earlier.
  struct Closer {
    ~Closer() { threads->close(); }
  };
  static const Closer closer;
  return *threads;
}

}  // namespace swp::io::detail
