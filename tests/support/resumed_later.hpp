#pragma once
// resumed_by_another_thread: what a test body awaits to suspend until another thread resumes
// it (through its lane), about 50 µs later.

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/async/future.hpp"

namespace swp::test {

/// Suspends until a thread it starts (kept in `threads`, under `mutex`; the caller joins them
/// once the run is over) completes a promise about 50 µs later.
inline Co<void> resumed_by_another_thread(std::vector<std::thread>& threads, std::mutex& mutex) {
  Promise<> promise;
  Future<> resumed = promise.get_future();
  {
    std::lock_guard lock(mutex);
    threads.emplace_back([promise]() mutable {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      promise.set_value();
    });
  }
  co_await resumed;
}

}  // namespace swp::test
