#pragma once
// Runnables the scheduler tests share: one that counts its runs, one that logs and posts.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "swp/async/scheduler.hpp"

namespace swp::test {

struct CountingRunnable final : swp::Runnable {
  std::atomic<int>* count = nullptr;
  std::atomic<int> runs{0};
  std::atomic<std::thread::id> ran_on{};
  void run() noexcept override {
    // Read before `runs` tells a waiter it ran: that waiter may destroy this runnable at once.
    // `count` (when set) outlives it, and counts only after `runs`, for waiters on the total.
    std::atomic<int>* const total = count;
    ran_on.store(std::this_thread::get_id());
    runs.fetch_add(1);
    if (total != nullptr) total->fetch_add(1);
  }
};

// Appends its id to a log (single-threaded tests only) and posts `follow`, if any.
struct LoggingRunnable final : swp::Runnable {
  swp::Scheduler* scheduler = nullptr;
  std::vector<int>* log = nullptr;
  int id = 0;
  swp::Runnable* follow = nullptr;
  std::vector<swp::Runnable*> follow_next;  // post_next'ed after `follow`, in order
  void run() noexcept override {
    log->push_back(id);
    if (follow != nullptr) scheduler->post(*follow);
    for (swp::Runnable* r : follow_next) scheduler->post_next(*r);
  }
};

// Logging runnables with ids 1..n on `pool`.
inline std::vector<std::unique_ptr<LoggingRunnable>> logging(swp::Scheduler& pool, std::vector<int>& log,
                                                      int n) {
  std::vector<std::unique_ptr<LoggingRunnable>> rs;
  for (int i = 1; i <= n; ++i) {
    rs.push_back(std::make_unique<LoggingRunnable>());
    rs.back()->scheduler = &pool;
    rs.back()->log = &log;
    rs.back()->id = i;
  }
  return rs;
}

}  // namespace swp::test
