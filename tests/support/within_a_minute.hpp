#pragma once
// Running a call that might hang (a serial run waiting for device work, a body that ignores
// cancellation) so that a hang fails the test instead of hanging the suite. The minute only
// ends a call that never returns; it asserts no wall-clock tolerance.

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include <doctest/doctest.h>

namespace swp::test {

/// Runs `call` on a thread of its own and waits up to 60 s for it: what it threw (nullptr: it
/// returned), or, when it hangs, a failed test instead of a hung suite (the thread is left).
inline std::exception_ptr within_a_minute(std::function<void()> call) {
  auto outcome = std::make_shared<std::promise<std::exception_ptr>>();
  std::future<std::exception_ptr> done = outcome->get_future();
  std::thread runner([call = std::move(call), outcome] {
    try {
      call();
      outcome->set_value(nullptr);
    } catch (...) {
      outcome->set_value(std::current_exception());
    }
  });
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    runner.detach();
    FAIL("the call hangs");
    return nullptr;
  }
  runner.join();
  return done.get();
}

}  // namespace swp::test
