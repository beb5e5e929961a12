#pragma once
// A small test-and-test-and-set lock for critical sections of a few instructions.

#include <atomic>
#include <thread>

namespace swp::detail {

/// Guards a lane's or a queue's few-instruction critical sections. It yields after a short
/// spin, so a holder preempted on a busy 2-core machine does not stall its waiters for a
/// whole time slice.
class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      // acquire: what the previous holder wrote before unlock() is visible after lock().
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace swp::detail
