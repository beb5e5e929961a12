#pragma once
// BusyWorkers: keeps every worker of a pool busy (each inside a runnable that waits) until
// release(), so that the thread driving the pool runs everything meanwhile.

#include <atomic>
#include <memory>
#include <vector>

#include "swp/async/scheduler.hpp"

namespace swp::test {

class BusyWorkers {
 public:
  // Posts one waiting runnable per worker of `scheduler` (call it before anything else is
  // posted and while no thread drives it, so that each worker takes one) and returns once
  // each runs.
  BusyWorkers(Scheduler& scheduler, unsigned workers) {
    for (unsigned w = 0; w < workers; ++w) {
      busy_.push_back(std::make_unique<Busy>(*this));
      scheduler.post(*busy_.back());
    }
    for (int seen = 0; (seen = started_.load()) < static_cast<int>(workers);) started_.wait(seen);
  }
  // Destroy it only once the pool's workers stopped (the runtime's end): they read it as they
  // leave the wait.
  ~BusyWorkers() = default;
  BusyWorkers(const BusyWorkers&) = delete;
  BusyWorkers& operator=(const BusyWorkers&) = delete;

  void release() {
    released_.store(true);
    released_.notify_all();
  }

  // Releases the workers as it goes, however the scope ends: declare it after the runtime
  // (whose end joins the workers, which would wait forever) and the BusyWorkers before it.
  class ReleaseOnExit {
   public:
    explicit ReleaseOnExit(BusyWorkers* busy) noexcept : busy_(busy) {}
    ~ReleaseOnExit() {
      if (busy_ != nullptr) busy_->release();
    }
    ReleaseOnExit(const ReleaseOnExit&) = delete;
    ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;

   private:
    BusyWorkers* busy_;
  };

 private:
  class Busy final : public Runnable {
   public:
    explicit Busy(BusyWorkers& owner) : owner_(owner) {}
    void run() noexcept override {
      owner_.started_.fetch_add(1);
      owner_.started_.notify_all();
      owner_.released_.wait(false);
    }

   private:
    BusyWorkers& owner_;
  };

  std::atomic<int> started_{0};
  std::atomic<bool> released_{false};
  std::vector<std::unique_ptr<Busy>> busy_;
};

}  // namespace swp::test
