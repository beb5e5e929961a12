#include "cuda_poller.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "swp/device/cuda/cuda_stream.hpp"

namespace swp::detail {

CudaPoller::CudaPoller(Pace pace, std::function<void()> bind)
    : pace_(pace), bind_(std::move(bind)), thread_([this] {
        if (bind_) bind_();
        loop();
      }) {}

CudaPoller::~CudaPoller() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void CudaPoller::add(CudaStream& stream) {
  std::lock_guard lock(mutex_);
  streams_.push_back(&stream);
}

void CudaPoller::remove(CudaStream& stream) {
  std::lock_guard lock(mutex_);  // after the pass under way, if one is
  streams_.erase(std::remove(streams_.begin(), streams_.end(), &stream), streams_.end());
}

void CudaPoller::nudge() noexcept {
  // seq_cst, with the thread's store of parked_ and load of work_ (store-buffering): either
  // the thread sees this nudge before it parks, or this sees it parked and wakes it.
  work_.fetch_add(1, std::memory_order_seq_cst);
  if (parked_.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(mutex_);
    wake_.notify_one();
  }
}

void CudaPoller::loop() {
  using namespace std::chrono_literals;
  constexpr int yields = 8;
  constexpr auto longest = std::chrono::microseconds(64);
  int idle_passes = 0;
  std::chrono::microseconds pause{1};
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const std::uint64_t seen = work_.load(std::memory_order_seq_cst);
    bool waiting = false;
    bool completed = false;
    for (CudaStream* stream : streams_) {
      const CudaStream::PollResult r = stream->poll();
      waiting |= r.waiting;
      completed |= r.completed;
    }
    if (completed) {
      idle_passes = 0;
      pause = std::chrono::microseconds(1);
    }
    if (waiting && pace_ == Pace::fault_watch) {
      // Host functions complete the items; this only looks for a fault that stops them.
      wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_; });
      continue;
    }
    if (waiting) {
      // The GPU has not got there yet: look again soon, less eagerly the longer it takes.
      lock.unlock();
      if (idle_passes < yields) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, longest);
      }
      ++idle_passes;
      lock.lock();
      continue;
    }
    parked_.store(true, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return stop_ || work_.load(std::memory_order_seq_cst) != seen; });
    parked_.store(false, std::memory_order_relaxed);
    idle_passes = 0;
    pause = std::chrono::microseconds(1);
  }
}

}  // namespace swp::detail
