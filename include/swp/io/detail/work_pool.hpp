#pragma once
// WorkPool: a few threads running posted jobs in FIFO order (the pread reader, the decode pool).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace swp::io::detail {

/// `threads` workers taking jobs first in, first out. The destructor runs the jobs still
/// queued, then joins. A job must not throw (callers catch and report their own errors).
class WorkPool {
 public:
  explicit WorkPool(std::size_t threads);
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;
  ~WorkPool();

  void post(std::function<void()> job);
  [[nodiscard]] std::size_t threads() const noexcept { return workers_.size(); }

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace swp::io::detail
